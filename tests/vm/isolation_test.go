package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
	"github.com/hivecrew/hivecrew/core/vm/vmtest"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

type running struct {
	m vm.Machine
	c *guest.Client
}

// startN creates and starts n sandboxes concurrently and connects to each.
func startN(t *testing.T, b vm.Backend, data string, n int, tmpl vm.Template, network vm.NetworkMode) []running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([]running, n)
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			id := fmt.Sprintf("vm%d-%s", i, randHex(3))
			m, err := b.Create(ctx, vm.Spec{ID: id, Template: tmpl, Dir: filepath.Join(data, "VMs", id), CPUs: 1, MemoryMB: 1024, Network: network})
			if err != nil {
				return err
			}
			t.Cleanup(func() { m.Delete(context.Background()) })
			if err := m.Start(ctx); err != nil {
				return err
			}
			out[i].m = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		out[i].c = vmtest.Connect(ctx, t, out[i].m)
	}
	return out
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sh runs a command in the guest and returns its result.
func sh(t *testing.T, c *guest.Client, cmd string) protocol.ShellResult {
	t.Helper()
	r, err := c.Shell(context.Background(), protocol.ShellParams{Command: cmd, TimeoutSeconds: 20})
	if err != nil {
		t.Fatalf("run %q: %v", cmd, err)
	}
	return r
}

// TestSixSandboxesAreIsolated: six sandboxes provisioned at once all answer
// hello; each sees only its own shared folder; the host's home, /tmp and
// the data directory are invisible; nothing runs as root inside or outside.
func TestSixSandboxesAreIsolated(t *testing.T) {
	data, err := os.MkdirTemp("/var/tmp", "hc-data-") // outside /tmp: the data dir must be masked by its own rule
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	home, _ := os.UserHomeDir()
	canaries := map[string]string{
		filepath.Join(home, "hivecrew-canary-"+randHex(4)+".txt"):  "home",
		filepath.Join(data, "canary.txt"):                          "data",
		filepath.Join(os.TempDir(), "hivecrew-canary-"+randHex(4)): "tmp",
	}
	for p, what := range canaries {
		if err := os.WriteFile(p, []byte("secret "+what), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	b := newBackend(t, data)
	ms := startN(t, b, data, 6, vm.Template{ID: "host", Kind: vm.KindHost}, vm.NetworkOffline)
	for i, r := range ms {
		os.WriteFile(filepath.Join(r.m.Spec().SharedDir(), "inbox", fmt.Sprintf("mine-%d.txt", i)), []byte("x"), 0o644)
	}
	for i, r := range ms {
		if h := r.c.Hello(); h.OS != "linux" || h.SharedPath != "/mnt/shared" {
			t.Fatalf("vm %d hello = %+v", i, h)
		}
		if got := strings.TrimSpace(sh(t, r.c, "ls /mnt/shared/inbox").Stdout); got != fmt.Sprintf("mine-%d.txt", i) {
			t.Errorf("vm %d sees inbox %q", i, got)
		}
		for p := range canaries {
			if res := sh(t, r.c, "cat "+p); res.ExitCode == 0 || strings.Contains(res.Stdout, "secret") {
				t.Errorf("vm %d reads the canary %s: %q", i, p, res.Stdout)
			}
		}
		for j, other := range ms {
			if j == i {
				continue
			}
			if res := sh(t, r.c, "ls "+filepath.Join(other.m.Spec().SharedDir(), "inbox")); res.ExitCode == 0 {
				t.Errorf("vm %d lists vm %d's inbox by its host path: %q", i, j, res.Stdout)
			}
		}
		if uid := strings.TrimSpace(sh(t, r.c, "id -u").Stdout); uid != "1000" {
			t.Errorf("vm %d runs as uid %s inside", i, uid)
		}
		if n := strings.Count(sh(t, r.c, "ls /proc | grep -E '^[0-9]+$'").Stdout, "\n"); n > 40 {
			t.Errorf("vm %d sees %d processes: not its own pid namespace", i, n)
		}
	}
	// Files the guest writes belong to the sandbox account, not root.
	r := ms[0]
	sh(t, r.c, "echo from-shell > /mnt/shared/outbox/shell.txt")
	text := "from write_file"
	if err := r.c.Call(context.Background(), protocol.MethodWriteFile, protocol.WriteFileParams{Path: "outbox/tool.txt", Contents: &text}, nil); err != nil {
		t.Fatal(err)
	}
	// Each machine runs as a host uid of its own, never the shared account
	// (a root helper), so one VM's escaped process owns nothing of another's.
	accountName, accountUID := b.Account()
	uids := map[int]int{}
	for i, m := range ms {
		uid := m.m.(*sandbox.Machine).HostUID()
		if j, dup := uids[uid]; dup {
			t.Errorf("vm %d and vm %d share host uid %d", i, j, uid)
		}
		uids[uid] = i
		if os.Geteuid() == 0 && (uid == accountUID || uid == 0) {
			t.Errorf("vm %d runs as host uid %d (the account %s is %d)", i, uid, accountName, accountUID)
		}
	}
	wantUID := r.m.(*sandbox.Machine).HostUID()
	for _, f := range []string{"shell.txt", "tool.txt"} {
		fi, err := os.Stat(filepath.Join(r.m.Spec().SharedDir(), "outbox", f))
		if err != nil {
			t.Fatal(err)
		}
		uid := int(fi.Sys().(*syscall.Stat_t).Uid)
		if uid == 0 || uid != wantUID {
			t.Errorf("outbox/%s is owned by uid %d, want the machine's uid %d", f, uid, wantUID)
		}
	}
	if st := r.m.Status(); st.Limits == (vm.Limits{}) {
		t.Errorf("status states no limits: %+v", st)
	}
}

// listen starts a TCP server on the host's loopback that answers "hello".
func listen(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// connect tries a TCP connection from the guest and reports the outcome.
func connect(t *testing.T, c *guest.Client, host string, port int) string {
	t.Helper()
	py := fmt.Sprintf(`import socket
try:
    s = socket.create_connection((%q, %d), 3)
    print("CONNECTED", s.recv(16).decode().strip())
except OSError as e:
    print("FAILED", e)`, host, port)
	return strings.TrimSpace(sh(t, c, "python3 -c '"+py+"'").Stdout)
}

func TestOfflineSandboxHasNoNetwork(t *testing.T) {
	data := t.TempDir()
	port := listen(t)
	r := startN(t, newBackend(t, data), data, 1, vm.Template{Kind: vm.KindHost}, vm.NetworkOffline)[0]
	// /proc/net/dev lists the interfaces of the sandbox's own namespace.
	ifaces := sh(t, r.c, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").Stdout
	if strings.TrimSpace(ifaces) != "lo" {
		t.Errorf("offline interfaces: %q", ifaces)
	}
	for _, host := range []string{"127.0.0.1", "10.0.2.2", "203.0.113.2"} {
		if out := connect(t, r.c, host, port); !strings.HasPrefix(out, "FAILED") {
			t.Errorf("offline guest connected to %s:%d: %s", host, port, out)
		}
	}
}

// testHost starts a TCP server answering "hello" on 203.0.113.2:8080 in a
// network namespace of the test's own, reached from the host over a veth
// pair (203.0.113.0/30, TEST-NET-3), and returns its address.
func testHost(t *testing.T) (string, int) {
	t.Helper()
	ns, r := "hc-"+randHex(3), randHex(2)
	hostIf, nsIf := "hcv"+r, "hcp"+r
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { exec.Command("ip", "link", "del", hostIf).Run() })
	run("ip", "link", "set", nsIf, "netns", ns)
	run("ip", "addr", "add", "203.0.113.1/30", "dev", hostIf)
	run("ip", "link", "set", hostIf, "up")
	run("ip", "netns", "exec", ns, "ip", "addr", "add", "203.0.113.2/30", "dev", nsIf)
	run("ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "up")
	run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	srv := exec.Command("ip", "netns", "exec", ns, "/usr/bin/python3", "-c", `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("203.0.113.2", 8080)); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"hello\n"); c.close()`)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", "203.0.113.2:8080", time.Second); err == nil {
			c.Close()
			return "203.0.113.2", 8080
		}
		if time.Now().After(deadline) {
			t.Fatal("the test host did not come up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestInternetSandboxCannotReachHostLoopback(t *testing.T) {
	data := t.TempDir()
	port := listen(t)
	outsideHost, outsidePort := testHost(t)
	r := startN(t, newBackend(t, data), data, 1, vm.Template{Kind: vm.KindHost}, vm.NetworkInternet)[0]
	// Outbound NAT works: a host beyond this machine's loopback answers.
	if out := connect(t, r.c, outsideHost, outsidePort); out != "CONNECTED hello" {
		t.Errorf("internet guest could not reach %s:%d through NAT: %s", outsideHost, outsidePort, out)
	}
	addr := sh(t, r.c, "cat /proc/net/fib_trie /proc/net/dev /etc/resolv.conf").Stdout
	for _, want := range []string{"10.0.2.100", "tap0", "nameserver 10.0.2.3"} {
		if !strings.Contains(addr, want) {
			t.Errorf("internet sandbox lacks %s:\n%s", want, addr)
		}
	}
	for _, host := range []string{"10.0.2.2", "127.0.0.1"} {
		if out := connect(t, r.c, host, port); !strings.HasPrefix(out, "FAILED") {
			t.Errorf("internet guest reached the host's loopback through %s:%d: %s", host, port, out)
		}
	}
}

// TestKilledAgentFailsTheCallClearly: SIGKILL to the guest agent mid-call
// fails the call at once with a clear error and ends the sandbox, whose
// status says why.
func TestKilledAgentFailsTheCallClearly(t *testing.T) {
	data := t.TempDir()
	r := startN(t, newBackend(t, data), data, 1, vm.Template{Kind: vm.KindHost}, vm.NetworkOffline)[0]
	errc := make(chan error, 1)
	go func() {
		errc <- r.c.Call(context.Background(), protocol.MethodWait, protocol.WaitParams{Seconds: 30}, nil)
	}()
	time.Sleep(200 * time.Millisecond)
	pid := r.m.(*sandbox.Machine).AgentPID()
	if pid == 0 {
		t.Fatal("no agent process")
	}
	t0 := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case err := <-errc:
		if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "connection lost") {
			t.Fatalf("call during the kill = %v, want a clear connection-lost error", err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Fatalf("the call took %s to fail", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not fail after the agent was killed")
	}
	select {
	case <-r.m.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the sandbox did not end with its agent")
	}
	if st := r.m.Status(); st.State != vm.StateError || !strings.Contains(st.Reason, "exited unexpectedly") {
		t.Fatalf("status after the kill = %+v", st)
	}
	// A fresh start works.
	if err := r.m.Start(context.Background()); err != nil {
		t.Fatalf("restart after the kill: %v", err)
	}
}
