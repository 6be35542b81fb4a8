package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// walkAround is the script of a model that may not run shell commands
// without asking, and runs code through open_app and open_file instead:
// a terminal by its desktop-file id, a script with a versioned
// interpreter as open_file's app (python3.11, perl5.36.0), a script with
// no suffix opened with its default application; then a text file, which
// opens in the editor. Each script would leave a file in outbox/.
func walkAround(shared string) []openai.ChatCompletionMessage {
	out := func(name string) string { return filepath.Join(shared, "outbox", name) }
	verdict, _ := json.Marshal(llm.Verdict{Success: true, Summary: "done"})
	return []openai.ChatCompletionMessage{
		tool("open_app", map[string]any{"name": "debian-xterm"}),
		tool("write_file", map[string]any{"path": "outbox/job.txt", "contents": fmt.Sprintf("open(%q, 'w').write('ran')\n", out("ran-python.txt"))}),
		tool("open_file", map[string]any{"path": "outbox/job.txt", "app": "python3.11"}),
		tool("write_file", map[string]any{"path": "outbox/job2.txt", "contents": fmt.Sprintf("open(my $f, '>', %q); print $f 'ran';\n", out("ran-perl.txt"))}),
		tool("open_file", map[string]any{"path": "outbox/job2.txt", "app": "perl5.36.0"}),
		tool("write_file", map[string]any{"path": "outbox/report", "contents": fmt.Sprintf("#!/bin/sh\necho ran > %s\n", out("ran-sh.txt"))}),
		tool("open_file", map[string]any{"path": "outbox/report"}),
		tool("write_file", map[string]any{"path": "outbox/notes.txt", "contents": "Meeting notes: ship on Friday.\n"}),
		tool("open_file", map[string]any{"path": "outbox/notes.txt"}),
		{Role: "assistant", Content: "Done."},
		{Role: "assistant", Content: string(verdict)},
	}
}

// TestTheTerminalGateJudgesWhatRuns, on a real sandbox whose shell
// scripts open with a program that runs them (as a desktop that runs a
// double-clicked script does), makes the moves that ran code with no
// prompt under "ask before shell commands": each now asks as
// open_terminal, showing what would run, and once denied nothing ran;
// the text file opens in the editor without a question. With shell
// commands denied the same moves are refused without asking.
func TestTheTerminalGateJudgesWhatRuns(t *testing.T) {
	ctx := context.Background()
	m, g, data := startGuest(t, "gate")
	// The guest's scripts open with sh, as a template could set them up.
	if out, err := g.Shell(ctx, protocol.ShellParams{Command: `mkdir -p ~/.local/share/applications ~/.config &&
		printf '[Desktop Entry]\nType=Application\nName=Run Script\nExec=sh %%f\nMimeType=text/x-shellscript;\n' > ~/.local/share/applications/run-script.desktop &&
		printf '[Default Applications]\ntext/x-shellscript=run-script.desktop\n' > ~/.config/mimeapps.list &&
		xdg-mime query default text/x-shellscript`}); err != nil || strings.TrimSpace(out.Stdout) != "run-script.desktop" {
		t.Fatalf("setting up the script handler: %+v, %v", out, err)
	}
	shared := g.Hello().SharedPath
	hostOutbox := filepath.Join(m.Spec().SharedDir(), "outbox")
	ran := func() []string {
		var found []string
		for _, f := range []string{"ran-python.txt", "ran-perl.txt", "ran-sh.txt"} {
			if _, err := os.Stat(filepath.Join(hostOutbox, f)); err == nil {
				found = append(found, f)
			}
		}
		return found
	}
	running := func(program string) bool {
		out, err := g.Shell(ctx, protocol.ShellParams{Command: "pgrep -x " + program + " || true"})
		return err == nil && strings.TrimSpace(out.Stdout) != ""
	}

	t.Run("ask", func(t *testing.T) {
		s := &scripted{answers: walkAround(shared)}
		r, done := startRunner(t, g, data, s, "gate-ask", config.Defaults("linux", "/nonexistent").ToolPolicy)
		for _, shows := range []string{"/usr/bin/xterm", "/usr/bin/python3.11", "/usr/bin/perl5.36.0", "#!/bin/sh"} {
			var p *agent.Permission
			waitUntil(t, "the question for "+shows, func() bool { _, p = r.Pending(); return p != nil })
			if p.Tool != config.OpenTerminal || !strings.Contains(p.Details, shows) {
				t.Fatalf("permission request %+v, want open_terminal showing %s", p, shows)
			}
			if err := r.Respond(p.ID, false); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the answer to reach the task", func() bool { _, p2 := r.Pending(); return p2 == nil || p2.ID != p.ID })
		}
		if res := <-done; res.Status != store.StatusCompleted {
			t.Fatalf("result = %+v", res)
		}
		reqs := s.requests()
		for _, i := range []int{1, 3, 5, 7} {
			if !strings.Contains(reqs[i], "the user denied open_") {
				t.Errorf("request %d: the model was not told of the denial", i)
			}
		}
		if !strings.HasSuffix(strings.TrimSpace(lastToolResult(reqs[9])), "Done.") {
			t.Errorf("the text file did not open without a question: %s", lastToolResult(reqs[9]))
		}
		time.Sleep(2 * time.Second) // an approved program would be up by now
		if found := ran(); len(found) > 0 || running("xterm") {
			t.Fatalf("code ran after the user denied it: %v, xterm running %v", found, running("xterm"))
		}
		if !running("mousepad") {
			t.Fatal("the text file did not open in the editor")
		}
	})

	t.Run("deny", func(t *testing.T) {
		s := &scripted{answers: walkAround(shared)}
		policy := config.ToolPolicy{"run_shell": config.Deny}
		r, done := startRunner(t, g, data, s, "gate-deny", policy)
		res := <-done
		if _, p := r.Pending(); p != nil || res.Status != store.StatusCompleted {
			t.Fatalf("result %+v, pending %+v", res, p)
		}
		reqs := s.requests()
		for _, i := range []int{1, 3, 5, 7} {
			if !strings.Contains(reqs[i], "opening a terminal, a shell or an interpreter is not allowed for this task") {
				t.Errorf("request %d: the move was not refused: %s", i, lastToolResult(reqs[i]))
			}
		}
		time.Sleep(2 * time.Second)
		if found := ran(); len(found) > 0 || running("xterm") {
			t.Fatalf("code ran with shell commands denied: %v, xterm running %v", found, running("xterm"))
		}
	})
}

// startRunner runs a task of the script on g, with policy.
func startRunner(t *testing.T, g *guest.Client, data string, s *scripted, id string, policy config.ToolPolicy) (*agent.Runner, chan agent.Result) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(data, "Sessions", id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	r, err := agent.New(agent.Config{Task: agent.Task{ID: id, Description: "Summarise the notes.", Policy: policy, Timeout: 3 * time.Minute},
		LLM: client, Guest: g, Trace: tw, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan agent.Result, 1)
	go func() { done <- r.Run(context.Background()) }()
	return r, done
}

// lastToolResult is the content of the last tool message of a chat
// request.
func lastToolResult(body string) string {
	var req openai.ChatCompletionRequest
	if json.Unmarshal([]byte(body), &req) != nil {
		return ""
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Content
		}
	}
	return ""
}
