package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// lookupTool is a host tool that answers from a table.
func lookupTool() HostTool {
	return HostTool{Name: "lookup", Description: "Look a fact up.", Timeout: time.Second,
		Params: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		Run: func(_ context.Context, raw json.RawMessage) (string, error) {
			var in struct{ Q string }
			json.Unmarshal(raw, &in)
			return "FACT: the tide turns at 14:05 (" + in.Q + ")", nil
		}}
}

// offeredTools are the function names a chat request offers.
func offeredTools(t *testing.T, body string) []string {
	t.Helper()
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// Threat: a research subagent (no VM) asks for what only a VM has: a
// click, a shell, a file of the shared folder, the provider's computer
// tool, a subagent of its own it was not given. Each is refused in words
// that say why and what it has, and nothing reaches the guest, even one
// it was handed by mistake: no action, no screenshot, no image in any
// request. Its host tool works and its answer is the result.
func TestHostAgentHasNoVM(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("mouse_click", map[string]any{"x": 10, "y": 10})}},
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "cat /etc/passwd"})}},
		{calls: []openai.ToolCall{call("read_file", map[string]any{"path": "inbox/secret.txt"})}},
		{calls: []openai.ToolCall{call("computer", map[string]any{"action": "screenshot"})}},
		{calls: []openai.ToolCall{call("spawn_subagent", map[string]any{"task": "more"})}},
		{calls: []openai.ToolCall{call("lookup", map[string]any{"q": "tide"})}},
	}, done(true, "The tide turns at 14:05.")...)...)
	e := newEnvWith(t, l, func(t *Task) { t.Host = true; t.Description = "Find when the tide turns" }, nil,
		func(c *Config) { c.HostTools = []HostTool{lookupTool()} })
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted || res.Summary != "The tide turns at 14:05." {
		t.Fatalf("result = %+v", res)
	}
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("the guest received %+v", acts)
	}
	reqs := l.requests()
	if got := offeredTools(t, reqs[0]); strings.Join(got, ",") != "todo,lookup" {
		t.Errorf("offered %v, want todo and lookup only", got)
	}
	for i, want := range []string{
		"mouse_click needs a VM, and this subagent has none: it works on the host, with lookup, todo only",
		"run_shell needs a VM",
		"read_file needs a VM",
		"computer needs a VM",
		"spawn_subagent is not available to this subagent: the tools you can call are lookup, todo",
		"FACT: the tide turns at 14:05 (tide)",
	} {
		if !strings.Contains(reqs[i+1], want) {
			t.Errorf("request %d does not tell the model %q:\n%s", i+1, want, reqs[i+1])
		}
	}
	for i, body := range reqs {
		if strings.Contains(body, "image_url") {
			t.Errorf("request %d carries an image", i)
		}
	}
	if !strings.Contains(reqs[0], "research subagent") || strings.Contains(reqs[0], "screenshot") {
		t.Errorf("the system prompt is not a research agent's:\n%s", reqs[0])
	}
	s, err := trace.Read(e.trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range s.Events {
		if ev.Type == "screenshot" {
			t.Fatalf("a screenshot was taken: %+v", ev)
		}
	}
}

// A message from the parent reaches the subagent's model at its next
// step and its activity shows it.
func TestHostAgentReadsItsParentsMessage(t *testing.T) {
	hold := make(chan struct{})
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("lookup", map[string]any{"q": "a"})}, hold: hold},
		{calls: []openai.ToolCall{call("lookup", map[string]any{"q": "b"})}},
	}, done(true, "ok")...)...)
	e := newEnvWith(t, l, func(t *Task) { t.Host = true }, nil, func(c *Config) { c.HostTools = []HostTool{lookupTool()} })
	res := e.run()
	waitFor(t, "the first request", func() bool { return len(l.requests()) == 1 })
	e.r.Message("the task that started you", "Look for the evening tide too.")
	close(hold)
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", r)
	}
	if !strings.Contains(l.requests()[1], "Message from the task that started you: Look for the evening tide too.") {
		t.Errorf("the model never read the message:\n%s", l.requests()[1])
	}
	seen := false
	for len(e.events) > 0 {
		ev := <-e.events
		seen = seen || ev.Type == "subagent_update" && strings.Contains(ev.Summary, "Look for the evening tide too.")
	}
	if !seen {
		t.Error("the activity does not show the message")
	}
}

// The worker model condenses a long history in the task's model's stead;
// the task's model is never asked to.
func TestCondenserCondenses(t *testing.T) {
	var script []turn
	for i := 0; i < 8; i++ {
		script = append(script, turn{calls: []openai.ToolCall{call("lookup", map[string]any{"q": strings.Repeat("tide ", 200)})}})
	}
	l := newLLM(t, append(script, done(true, "ok")...)...)
	var mu sync.Mutex
	var asked []string
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req openai.ChatCompletionRequest
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		asked = append(asked, req.Model)
		mu.Unlock()
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: "SUMMARY by the worker"}}}})
	}))
	t.Cleanup(worker.Close)
	wc, err := llm.New(llm.Config{BaseURL: worker.URL, Model: "worker-small", BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, l, func(t *Task) { t.Host = true; t.ContextTokens = 3000 }, nil, func(c *Config) {
		c.HostTools = []HostTool{lookupTool()}
		c.Condenser = wc
	})
	if r := wait(t, e.run()); r.Status != store.StatusCompleted || r.Summaries == 0 {
		t.Fatalf("result = %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 || asked[0] != "worker-small" {
		t.Fatalf("the worker was asked %v", asked)
	}
	all := strings.Join(l.requests(), "\n")
	if strings.Contains(all, "You condense the history") {
		t.Error("the task's model was asked to condense")
	}
	if !strings.Contains(all, "SUMMARY by the worker") {
		t.Error("the worker's summary never reached the task's model")
	}
}

// Threat: over OpenAI's Responses API, a research subagent's model
// answers with a computer_call, the provider's own computer tool, which
// its requests never offered (the strict server is told, and still plays
// it). The call is refused in words that say a VM is needed, nothing
// reaches a guest, and the run goes on to its end; the server refused no
// request that followed.
func TestHostAgentRefusesAForgedComputerCall(t *testing.T) {
	var mu sync.Mutex
	var forged []string
	s, stop := responsestest.Start(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		forged = append(forged, fmt.Sprintf(format, args...))
	})
	t.Cleanup(stop)
	s.Script("[[forged]]", append([]responsestest.Turn{responsestest.Computer(map[string]any{"type": "screenshot"})}, responsestest.Done("Nothing to click.")...)...)
	rc, err := llm.New(llm.Config{Type: llm.TypeOpenAI, BaseURL: s.URL, Model: "gpt-5", BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, newLLM(t), func(t *Task) { t.Host = true; t.Description = "Research [[forged]]" }, nil, func(c *Config) { c.LLM = rc })
	if res := wait(t, e.run()); res.Status != store.StatusCompleted || res.Summary != "Nothing to click." {
		t.Fatalf("result = %+v", res)
	}
	mu.Lock()
	if len(forged) != 1 || !strings.Contains(forged[0], "a computer call") {
		t.Errorf("the server was told of %q; want the one forged computer_call", forged)
	}
	mu.Unlock()
	reqs := s.Requests("[[forged]]")
	if len(reqs) < 2 || !strings.Contains(reqs[1], "computer needs a VM, and this subagent has none") {
		t.Fatalf("the model was not told the computer tool needs a VM: %q", reqs)
	}
	if strings.Contains(reqs[0], `"computer_use_preview"`) {
		t.Error("the first request offers the computer tool")
	}
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("the guest received %+v", acts)
	}
	if n := s.Refusals(); n != 0 {
		t.Errorf("the server refused %d request(s)", n)
	}
}
