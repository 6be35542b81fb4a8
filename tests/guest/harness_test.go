// Package guest tests the guest agent end to end: the real binary on a real
// Xvfb desktop with real X and GTK clients, over its real unix socket.
package guest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/jezek/xgb"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
	"github.com/hivecrew/hivecrew/tests/testbin"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// agentBin is the guest agent built for this test run.
var agentBin string

func TestMain(m *testing.M) {
	xgb.Logger = log.New(io.Discard, "", 0) // the tests' own X clients have no .Xauthority
	testbin.MainWithAgent(m, &agentBin)
}

// agent is a running guest agent and a client connected to it.
type agent struct {
	t       *testing.T
	cmd     *exec.Cmd
	shared  string
	sock    string
	logPath string
	cli     *jrpc2.Client
	notes   chan *jrpc2.Request
}

// log returns what the agent has logged so far.
func (a *agent) log() string {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		a.t.Fatal(err)
	}
	return string(b)
}

func startAgent(t *testing.T, env *xenv.Env) *agent {
	t.Helper()
	dir := filepath.Join(env.Dir, "agent")
	shared := filepath.Join(dir, "shared")
	sock := filepath.Join(dir, "agent.sock")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := env.Command(agentBin, "--listen", "unix:"+sock, "--shared", shared, "--log-level", "debug")
	logf, _ := os.Create(filepath.Join(dir, "agent.log"))
	cmd.Stderr = logf
	env.Start(cmd)
	a := &agent{t: t, cmd: cmd, shared: shared, sock: sock, logPath: filepath.Join(dir, "agent.log"), notes: make(chan *jrpc2.Request, 256)}
	var conn net.Conn
	env.WaitFor(5*time.Second, "the guest agent's socket", func() bool {
		var err error
		conn, err = net.Dial("unix", sock)
		return err == nil
	})
	a.cli = jrpc2.NewClient(transport.Line(conn, conn), &jrpc2.ClientOptions{
		OnNotify: func(r *jrpc2.Request) {
			select {
			case a.notes <- r:
			default:
			}
		},
	})
	t.Cleanup(func() {
		a.cli.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
			t.Logf("guest agent log:\n%s", b)
		}
	})
	// The agent runs outside a sandbox, without --key-fd: the first hello
	// enrolls its key (as on macOS guests).
	p := helloParams()
	p.EnrollKey = agentKey
	if _, err := call[protocol.HelloResult](a, protocol.MethodHello, p); err != nil {
		t.Fatalf("hello: %v", err)
	}
	return a
}

// agentKey is the boot key the tests' agents are enrolled with.
var agentKey = bytes.Repeat([]byte{0x42}, protocol.KeyBytes)

// helloParams is a hello with a fresh challenge.
func helloParams() protocol.HelloParams {
	c := make([]byte, protocol.ChallengeBytes)
	rand.Read(c)
	return protocol.HelloParams{ProtocolVersion: protocol.Version, Challenge: c}
}

func call[R any](a *agent, method string, params any) (R, error) {
	var r R
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := a.cli.CallResult(ctx, method, params, &r)
	return r, transport.FromRPC(err)
}

func must[R any](a *agent, method string, params any) R {
	a.t.Helper()
	r, err := call[R](a, method, params)
	if err != nil {
		a.t.Fatalf("%s(%+v): %v", method, params, err)
	}
	return r
}

// event is one line the test app printed.
type event struct {
	Event     string  `json:"event"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	Button    int     `json:"button"`
	Kind      string  `json:"kind"`
	Text      string  `json:"text"`
	Direction string  `json:"direction"`
	// State is the X modifier state (Shift 1, Control 4, Mod1 8, Mod4 64).
	State uint32 `json:"state"`
	// Time is the X server's time of a key event, in milliseconds.
	Time int64 `json:"time"`
}

// app is a running GTK test client.
type app struct {
	t      *testing.T
	events chan event
	pid    int
}

func startApp(t *testing.T, env *xenv.Env, mode string) *app {
	t.Helper()
	cmd := env.Command("/usr/bin/python3", "testdata/app.py", mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	env.Start(cmd)
	a := &app{t: t, events: make(chan event, 256), pid: cmd.Process.Pid}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				a.events <- e
			}
		}
	}()
	a.wait(10*time.Second, "the app's window", func(e event) bool { return e.Event == "ready" })
	// Let the window manager map and focus it.
	time.Sleep(200 * time.Millisecond)
	return a
}

// wait returns the first event matching ok.
func (a *app) wait(timeout time.Duration, what string, ok func(event) bool) event {
	a.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-a.events:
			if ok(e) {
				return e
			}
		case <-deadline:
			a.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// drain discards pending events.
func (a *app) drain() {
	for {
		select {
		case <-a.events:
		case <-time.After(150 * time.Millisecond):
			return
		}
	}
}

// find returns the first node (depth first) matching ok.
func find(nodes []protocol.Node, ok func(protocol.Node) bool) (protocol.Node, bool) {
	for _, n := range nodes {
		if ok(n) {
			return n, true
		}
		if c, found := find(n.Children, ok); found {
			return c, true
		}
	}
	return protocol.Node{}, false
}

// waitNode polls the accessibility tree of the test app for a node.
func waitNode(t *testing.T, a *agent, what string, ok func(protocol.Node) bool) protocol.Node {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		tree, err := call[protocol.AccessibilityResult](a, protocol.MethodAccessibilityTree,
			protocol.AccessibilityParams{App: "hivecrew-testapp", OnlyVisible: true})
		if err == nil {
			if n, found := find(tree.Nodes, ok); found {
				return n
			}
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no accessible %s (last error: %v)", what, lastErr)
	return protocol.Node{}
}

// messageEntry waits for the form's text entry named Message.
func messageEntry(t *testing.T, a *agent) protocol.Node {
	t.Helper()
	return waitNode(t, a, "text entry named Message", func(n protocol.Node) bool {
		return n.Role == "text" && n.Name == "Message"
	})
}

func codeOf(err error) int {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return 0
}

func center(n protocol.Node) (float64, float64) {
	return n.Frame.X + n.Frame.W/2, n.Frame.Y + n.Frame.H/2
}
