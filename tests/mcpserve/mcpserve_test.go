// Package mcpserve tests Hivecrew as an MCP server the way other agents
// use it: the official MCP Go SDK's client against `hivecrew mcp serve`
// (stdio) and against the helper's streamable HTTP endpoint, with the
// real hivecrew-helper process, real sandboxes and a scripted provider.
// A task asks a question, asks to run a command, is answered and
// approved through the tools, completes, and its outputs are listed and
// read (a hostile one made printable, a binary one not sent); another is
// cancelled. Over HTTP the attacker's moves are made for real: no key, a
// session cookie alone, a key from another site or under another host
// name.
package mcpserve

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/mcpserve"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/mcpclient"
)

var bin string

func TestMain(m *testing.M) { helperproc.Main(m, &bin) }

// start runs a helper with the scripted provider as its default.
func start(t *testing.T) (*helperproc.Proc, *llmtest.Server) {
	t.Helper()
	p := helperproc.Start(t, bin, daemontest.NewHome(t))
	p.NoMountsAtEnd(t)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	return p, llm
}

// report is the output the agent writes: a terminal escape in it (a
// title change) must reach the caller as an escape, not act.
const report = "Colour: blue\n\x1b]0;pwned\x07done\n"

// paint is the script of the task the tools drive: a question, a shell
// command (run_shell asks by default) that leaves a binary file, a text
// file, the end.
func paint(marker string) []llmtest.Turn {
	return append([]llmtest.Turn{
		llmtest.Tool("ask_text_question", map[string]any{"question": "Which colour?"}),
		llmtest.Tool("run_shell", map[string]any{"command": `printf 'ELF\000\001' > /mnt/shared/outbox/blob.bin`}),
		llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": report}),
	}, llmtest.Done("Painted it blue.")...)
}

// drive runs a task through the tools of s as another agent would:
// run_task comes back with the question, answer_question, get_task comes
// back with the permission, approve_tool, get_task comes back with the
// end; then its outputs. Then a task held by its model is cancelled.
func drive(t *testing.T, s *mcp.ClientSession, llm *llmtest.Server, marker string) {
	t.Helper()
	ctx := context.Background()
	llm.Script(marker, paint(marker)...)
	var task mcpserve.Task
	call := func(tool string, args map[string]any, out any) {
		t.Helper()
		if _, err := mcpclient.Call(ctx, s, tool, args, out); err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
	}
	call("run_task", map[string]any{"description": "Paint the wall " + marker, "waitSeconds": 120}, &task)
	if task.Question == nil || task.Question.Text != "Which colour?" {
		t.Fatalf("run_task came back with %+v; want the question", task)
	}
	id := task.ID
	call("answer_question", map[string]any{"taskId": id, "questionId": task.Question.ID, "answer": "blue"}, &task)
	call("get_task", map[string]any{"taskId": id, "waitSeconds": 120}, &task)
	if task.Permission == nil || task.Permission.Tool != "run_shell" || !strings.Contains(task.Permission.Details, "blob.bin") {
		t.Fatalf("get_task came back with %+v; want run_shell's permission", task)
	}
	call("approve_tool", map[string]any{"taskId": id, "permissionId": task.Permission.ID, "approved": true}, &task)
	call("get_task", map[string]any{"taskId": id, "waitSeconds": 120}, &task)
	if task.Status != "completed" || !task.Ended || task.Successful == nil || !*task.Successful || task.Result != "Painted it blue." {
		t.Fatalf("the task ended %+v", task)
	}
	if reqs := llm.Requests(marker); len(reqs) < 3 || !strings.Contains(strings.Join(reqs, ""), "The user answered: blue") {
		t.Fatal("the answer did not reach the model")
	}

	var outs mcpserve.Outputs
	call("get_task_outputs", map[string]any{"taskId": id}, &outs)
	sizes := map[string]int64{}
	for _, f := range outs.Files {
		sizes[f.Name] = f.Size
		if f.SavedTo == "" {
			t.Errorf("%s: not saved", f.Name)
		}
	}
	if len(sizes) != 2 || sizes["report.txt"] != int64(len(report)) || sizes["blob.bin"] != 5 {
		t.Fatalf("outputs %+v", outs)
	}
	var read mcpserve.OutputRead
	res, err := mcpclient.Call(ctx, s, "read_task_output", map[string]any{"taskId": id, "name": "report.txt"}, &read)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Colour: blue\n" + `\x1b]0;pwned\x07` + "done\n"; read.Text != want || strings.Contains(mcpclient.Text(res), "\x1b") {
		t.Fatalf("report.txt read as %q; want %q", read.Text, want)
	}
	var te mcpclient.ToolError
	if _, err := mcpclient.Call(ctx, s, "read_task_output", map[string]any{"taskId": id, "name": "blob.bin"}, nil); !errors.As(err, &te) || !strings.Contains(te.Text, "not text") {
		t.Fatalf("blob.bin: %v; want it not sent", err)
	}

	// Cancel.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	held := marker + "[held]"
	llm.Script(held, llmtest.Turn{Msg: llmtest.Text("never").Msg, Hold: hold})
	call("run_task", map[string]any{"description": "Wait for ever " + held, "waitSeconds": 0}, &task)
	if task.Ended {
		t.Fatalf("a task just started has ended: %+v", task)
	}
	deadline := time.Now().Add(time.Minute)
	for len(llm.Requests(held)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the held task's agent never called its model")
		}
		time.Sleep(50 * time.Millisecond)
	}
	call("cancel_task", map[string]any{"taskId": task.ID}, &task)
	call("get_task", map[string]any{"taskId": task.ID, "waitSeconds": 60}, &task)
	if task.Status != "cancelled" || !task.Ended {
		t.Fatalf("cancel_task: the task is %+v", task)
	}
}

// TestMCPServeStdio: `hivecrew mcp serve`, started by the client as an
// agent starts an MCP server, drives a task in a real sandbox, and exits
// cleanly when the client closes its stdin.
func TestMCPServeStdio(t *testing.T) {
	p, llm := start(t)
	cmd := exec.Command(filepath.Join(bin, "hivecrew"), "mcp", "serve", "--home", p.Home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	s, err := mcpclient.Stdio(context.Background(), cmd)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	drive(t, s, llm, "[[stdio]]")
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, stderr.String())
	}
	if !cmd.ProcessState.Success() {
		t.Fatalf("hivecrew mcp serve ended %v:\n%s", cmd.ProcessState, stderr.String())
	}
}

// TestMCPOverHTTP: the helper's endpoint, with the API key, drives a
// task in a real sandbox; without the key, with a session cookie alone,
// or with the key from another site or under another host name, it
// answers nothing but a refusal.
func TestMCPOverHTTP(t *testing.T) {
	p, llm := start(t)
	ctx := context.Background()
	s, err := mcpclient.HTTP(ctx, p.Addr, http.Header{"Authorization": {"Bearer " + p.Key}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	drive(t, s, llm, "[[http]]")

	cookie := signIn(t, p)
	port := p.Addr[strings.LastIndex(p.Addr, ":")+1:]
	for _, c := range []struct {
		what   string
		hdr    http.Header
		status int
	}{
		{"no key", http.Header{}, http.StatusUnauthorized},
		{"a session cookie alone", http.Header{"Cookie": {cookie}}, http.StatusForbidden},
		{"the key from another site", http.Header{"Authorization": {"Bearer " + p.Key}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"the key under another host name", http.Header{"Authorization": {"Bearer " + p.Key}, "Host": {"rebound.example:" + port}}, http.StatusForbidden},
	} {
		if err := mcpclient.Refused(ctx, p.Addr, c.hdr, c.status); err != nil {
			t.Errorf("with %s: %v", c.what, err)
		}
	}
}

// signIn opens a login link as a browser does and returns its session
// cookie (name=value).
func signIn(t *testing.T, p *helperproc.Proc) string {
	t.Helper()
	link, err := p.Unix.LoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0].Name + "=" + resp.Cookies()[0].Value
}
