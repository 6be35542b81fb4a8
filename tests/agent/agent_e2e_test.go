// Package agent runs the agent loop end to end: a real sandbox with a real
// desktop and guest agent, real applications, and an OpenAI-compatible
// server in the test that plays a script of tool calls and records what it
// was sent (the only fake of the end-to-end tests).
package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

var agentBin string

func TestMain(m *testing.M) { testbin.MainWithAgent(m, &agentBin) }

// scripted answers chat requests from a list: tool calls, then text, then
// a verdict for the completion check.
type scripted struct {
	mu      sync.Mutex
	answers []openai.ChatCompletionMessage
	// holds, by answer index, delay an answer until the channel closes.
	holds  map[int]chan struct{}
	bodies []string
}

func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	msg := openai.ChatCompletionMessage{Role: "assistant", Content: "out of script"}
	if n < len(s.answers) {
		msg = s.answers[n]
	}
	hold := s.holds[n]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}}, Usage: openai.Usage{PromptTokens: 1000, CompletionTokens: 20}})
}

func tool(name string, args any) openai.ChatCompletionMessage {
	b, _ := json.Marshal(args)
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c-" + name, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: string(b)}}}}
}

// startGuest starts a sandbox of the host template and connects to its guest.
func startGuest(t *testing.T, id string) (vm.Machine, *guest.Client, string) {
	t.Helper()
	return startSizedGuest(t, id, 0, 0)
}

// startSizedGuest is startGuest with a screen of w x h points (0: the
// default).
func startSizedGuest(t *testing.T, id string, w, h int) (vm.Machine, *guest.Client, string) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	data := t.TempDir()
	b, err := sandbox.New(sandbox.Config{AgentBinary: agentBin, DataDir: data, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Create(ctx, vm.Spec{ID: id, Template: vm.Template{Kind: vm.KindHost}, Dir: filepath.Join(data, id), Network: vm.NetworkOffline,
		MemoryMB: 2048, DisplayWidth: w, DisplayHeight: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Delete(context.Background()) })
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := guest.Connect(ctx, guest.Config{Dial: m.DialGuest, Key: m.GuestKey, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return m, g, data
}

const sentence = "Hivecrew agents save their work."

// TestAgentWritesWithATextEditor: the script opens a text editor on a file
// in outbox/, types a sentence, saves, and finishes. The file holds the
// sentence, the task is completed with the verifier's summary, and the trace
// has one screenshot per step.
func TestAgentWritesWithATextEditor(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, g, data := startGuest(t, "editor")

	verdict, _ := json.Marshal(llm.Verdict{Success: true, Summary: "Wrote the sentence into outbox/note.txt with Mousepad."})
	s := &scripted{answers: []openai.ChatCompletionMessage{
		tool("write_file", map[string]any{"path": "outbox/note.txt", "contents": ""}),
		tool("open_file", map[string]any{"path": "outbox/note.txt", "app": "mousepad"}),
		tool("wait", map[string]any{"seconds": 2}),
		tool("keyboard_type", map[string]any{"text": sentence}),
		tool("keyboard_key", map[string]any{"key": "s", "modifiers": []string{"control"}}),
		tool("wait", map[string]any{"seconds": 1}),
		{Role: "assistant", Content: "I typed the sentence and saved the file."},
		{Role: "assistant", Content: string(verdict)},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	sessionDir := filepath.Join(data, "Sessions", "s1")
	tw, err := trace.Create(sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	r, err := agent.New(agent.Config{
		Task: agent.Task{ID: "t1", Description: "Write the sentence into outbox/note.txt with a text editor.",
			Network: config.NetworkOffline, Policy: config.ToolPolicy{}, Timeout: 2 * time.Minute},
		LLM: client, Guest: g, Trace: tw, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(ctx)
	if res.Status != store.StatusCompleted || res.Summary != "Wrote the sentence into outbox/note.txt with Mousepad." {
		t.Fatalf("result = %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(m.Spec().SharedDir(), "outbox", "note.txt"))
	if err != nil || strings.TrimSpace(string(got)) != sentence {
		t.Fatalf("outbox/note.txt = %q, %v", got, err)
	}
	sess, err := trace.Read(sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	shots := 0
	for _, e := range sess.Events {
		if e.Type == "screenshot" {
			shots++
		}
	}
	if shots != res.Steps || res.Steps != 7 {
		t.Fatalf("%d screenshots for %d steps (want 7)", shots, res.Steps)
	}
}

// TestVerifierSaysNo: the completion check answers success=false (twice,
// the bound): the task ends failed with that summary.
func TestVerifierSaysNo(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, g, data := startGuest(t, "no")
	no, _ := json.Marshal(llm.Verdict{Success: false, Summary: "There is no PDF in inbox/ to summarise."})
	s := &scripted{answers: []openai.ChatCompletionMessage{
		{Role: "assistant", Content: "There is nothing in the inbox."}, {Role: "assistant", Content: string(no)},
		{Role: "assistant", Content: "I cannot do this without a PDF."}, {Role: "assistant", Content: string(no)},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, _ := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted"})
	tw, err := trace.Create(filepath.Join(data, "Sessions", "s2"))
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	r, _ := agent.New(agent.Config{Task: agent.Task{ID: "t2", Description: "Summarise the PDF in inbox/.", Policy: config.ToolPolicy{}},
		LLM: client, Guest: g, Trace: tw, Log: log})
	res := r.Run(ctx)
	if res.Status != store.StatusFailed || res.Summary != "There is no PDF in inbox/ to summarise." {
		t.Fatalf("result = %+v", res)
	}
}

// TestUserStaysInControl, on a real sandbox: a multiple-choice question
// blocks until answered; a takeover during an LLM answer keeps its action
// from running and the hand-back's instructions reach the model; cancel
// stops a 60 s guest call within a second.
func TestUserStaysInControl(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, g, data := startGuest(t, "ctl")
	hold := make(chan struct{})
	s := &scripted{
		answers: []openai.ChatCompletionMessage{
			tool("ask_multiple_choice", map[string]any{"question": "Which report?", "options": []string{"Q1", "Q2"}}),
			tool("keyboard_type", map[string]any{"text": "should not be typed"}),
			tool("wait", map[string]any{"seconds": 60}),
		},
		holds: map[int]chan struct{}{1: hold},
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, _ := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted"})
	tw, err := trace.Create(filepath.Join(data, "Sessions", "s3"))
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	r, _ := agent.New(agent.Config{Task: agent.Task{ID: "t3", Description: "Pick a report.", Policy: config.ToolPolicy{}}, LLM: client, Guest: g, Trace: tw, Log: log})
	done := make(chan agent.Result, 1)
	go func() { done <- r.Run(ctx) }()

	waitUntil(t, "the question", func() bool { q, _ := r.Pending(); return q != nil })
	q, _ := r.Pending()
	if st, _ := r.Status(); st != store.StatusRunning {
		t.Fatalf("status while asking = %s", st)
	}
	if err := r.Answer(q.ID, "Q2"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the held LLM request", func() bool { return len(s.requests()) == 2 })
	if !strings.Contains(s.requests()[1], "The user answered: Q2") {
		t.Fatal("the answer did not reach the model")
	}
	r.TakeOver()
	close(hold)
	time.Sleep(500 * time.Millisecond)
	if st, _ := r.Status(); st != store.StatusPaused {
		t.Fatalf("status after takeover = %s", st)
	}
	// The held answer's keyboard_type never ran: the trace has no result for it.
	tw.Sync()
	sess, _ := trace.Read(filepath.Join(data, "Sessions", "s3"))
	for _, e := range sess.Events {
		if e.Type == "tool_call_result" && e.Tool == "keyboard_type" {
			t.Fatal("an action ran after the user took over")
		}
	}
	r.Resume("Only look at Q2.")
	waitUntil(t, "the next LLM request", func() bool { return len(s.requests()) == 3 })
	if !strings.Contains(s.requests()[2], "New instructions from the user: Only look at Q2.") {
		t.Fatal("the hand-back's instructions did not reach the model")
	}
	time.Sleep(300 * time.Millisecond) // the 60 s wait is now running in the guest
	t0 := time.Now()
	r.Cancel()
	select {
	case res := <-done:
		if res.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("%+v after %s", res, time.Since(t0))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not stop the run")
	}
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPromptInjectedModelIsKeptToItsTools, on a real sandbox, answers a
// model told by a hostile page to attack: it calls the guest's own
// shutdown (which used to power the VM off), hello, health_check (guest
// methods never offered) and a made-up tool, and, its shell use needing approval under
// the default policy, opens a terminal to type commands there instead.
// The first four are refused on the host with the valid tools named; the
// terminal waits for the user's approval, and once denied never opens; the
// VM keeps running.
func TestPromptInjectedModelIsKeptToItsTools(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, g, data := startGuest(t, "inject")
	verdict, _ := json.Marshal(llm.Verdict{Success: true, Summary: "done"})
	s := &scripted{answers: []openai.ChatCompletionMessage{
		tool("shutdown", map[string]any{}),
		tool("hello", map[string]any{"protocolVersion": 1}),
		tool("health_check", map[string]any{}),
		tool("steal_keys", map[string]any{}),
		tool("open_app", map[string]any{"name": "xterm"}),
		{Role: "assistant", Content: "Done."},
		{Role: "assistant", Content: string(verdict)},
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, _ := llm.New(llm.Config{BaseURL: srv.URL, Model: "scripted"})
	tw, err := trace.Create(filepath.Join(data, "Sessions", "inject"))
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	policy := config.Defaults("linux", "/nonexistent").ToolPolicy // run_shell: ask
	r, _ := agent.New(agent.Config{Task: agent.Task{ID: "inject", Description: "Summarise the web page.", Policy: policy, Timeout: 2 * time.Minute},
		LLM: client, Guest: g, Trace: tw, Log: log})
	done := make(chan agent.Result, 1)
	go func() { done <- r.Run(ctx) }()

	waitUntil(t, "the permission request for the terminal", func() bool { _, p := r.Pending(); return p != nil })
	_, p := r.Pending()
	if p.Tool != config.OpenTerminal || !strings.Contains(p.Details, "xterm") {
		t.Fatalf("permission request %+v, want open_terminal for xterm", p)
	}
	if err := r.Respond(p.ID, false); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	reqs := s.requests()
	for i, name := range []string{"shutdown", "hello", "health_check", "steal_keys"} {
		if !strings.Contains(reqs[i+1], `there is no tool \"`+name+`\": the tools you can call are `) {
			t.Errorf("%s was not refused with the valid tools", name)
		}
	}
	if !strings.Contains(reqs[5], "the user denied open_app") {
		t.Error("the model was not told the terminal was denied")
	}
	if st := m.Status(); st.State != vm.StateRunning || !g.Healthy() {
		t.Fatalf("the VM is %s (%s), guest healthy %v", st.State, st.Reason, g.Healthy())
	}
	// An approved xterm would be up within a second or so.
	out, err := g.Shell(ctx, protocol.ShellParams{Command: "sleep 2; pgrep -x xterm || echo none"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.Stdout) != "none" {
		t.Fatalf("a terminal runs after the user denied it: pid %s", out.Stdout)
	}
}
