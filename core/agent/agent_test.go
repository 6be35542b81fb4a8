package agent

import (
	"context"
	"encoding/json"
	"image/color"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// turn is one scripted LLM answer.
type turn struct {
	text    string
	calls   []openai.ToolCall
	verdict *llm.Verdict
	status  int    // an HTTP error instead
	body    string // the error's body (default: a scripted failure)
	finish  openai.FinishReason
	hold    chan struct{} // answer only once closed
}

func call(name string, args any) openai.ToolCall {
	b, _ := json.Marshal(args)
	return openai.ToolCall{ID: "call-" + name, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: string(b)}}
}

func done(success bool, summary string) []turn {
	return []turn{{text: "finished"}, {verdict: &llm.Verdict{Success: success, Summary: summary}}}
}

// llmServer plays a script and records every request body.
type llmServer struct {
	mu     sync.Mutex
	script []turn
	bodies []string
	served int // scripted answers given (summary requests are not)
	srv    *httptest.Server
}

func newLLM(t *testing.T, script ...turn) *llmServer {
	s := &llmServer{script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		if strings.Contains(string(body), "You condense the history") {
			// A summary request: answered outside the script.
			s.mu.Unlock()
			json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: "SUMMARY: the agent waited several times."}}}})
			return
		}
		n := s.served
		s.served++
		var t turn
		if n < len(s.script) {
			t = s.script[n]
		} else {
			t = turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}}
		}
		s.mu.Unlock()
		if t.hold != nil {
			select {
			case <-t.hold:
			case <-r.Context().Done():
				return
			}
		}
		if t.status != 0 {
			w.WriteHeader(t.status)
			if t.body == "" {
				t.body = `{"error":{"message":"scripted failure"}}`
			}
			w.Write([]byte(t.body))
			return
		}
		msg := openai.ChatCompletionMessage{Role: "assistant", Content: t.text, ToolCalls: t.calls}
		if t.verdict != nil {
			v, _ := json.Marshal(t.verdict)
			msg = openai.ChatCompletionMessage{Role: "assistant", Content: string(v)}
		}
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: t.finish}},
			Usage: openai.Usage{PromptTokens: len(body) / 4, CompletionTokens: 10}})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *llmServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

type env struct {
	r      *Runner
	m      *fake.Machine
	trace  string
	events chan Event
}

// newEnv starts a fake guest with a 1440x900-point screen at scale 2 (the
// screenshot the model sees is downscaled to 1024x640, the default cap)
// and a runner.
func newEnv(t *testing.T, l *llmServer, mutate func(*Task)) *env {
	t.Helper()
	return newEnvWith(t, l, mutate, nil)
}

// newEnvWith is newEnv with the runner's guest wrapped by wrap.
func newEnvWith(t *testing.T, l *llmServer, mutate func(*Task), wrap func(Guest) Guest, opts ...func(*Config)) *env {
	t.Helper()
	return newEnvOn(t, fake.Options{Width: 1440, Height: 900, Scale: 2}, l, mutate, wrap, opts...)
}

// newEnvOn is newEnvWith on a fake backend of these options.
func newEnvOn(t *testing.T, o fake.Options, l *llmServer, mutate func(*Task), wrap func(Guest) Guest, opts ...func(*Config)) *env {
	t.Helper()
	b := fake.New(o)
	ctx := context.Background()
	dir := t.TempDir()
	mach, err := b.Create(ctx, vm.Spec{ID: "vm", Dir: filepath.Join(dir, "vm"), Template: vm.Template{Kind: vm.KindHost}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mach.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mach.Delete(context.Background()) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Live shell output reaches the runner as the orchestrator wires it.
	var runner atomic.Pointer[Runner]
	g, err := guest.Connect(ctx, guest.Config{Dial: mach.DialGuest, Key: mach.GuestKey, Log: log, OnNotify: func(method string, params json.RawMessage) {
		if r := runner.Load(); r != nil && method == protocol.NotifyShellOutput {
			r.ShellOutput(params)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	client, err := llm.New(llm.Config{BaseURL: l.srv.URL, Model: "gpt-test", BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
		Prices: llm.PriceTable{"gpt-test": {PromptPerMTok: 1, CompletionPerMTok: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, "session"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	task := Task{ID: "t1", Description: "Click the button and type hello", Network: config.NetworkOffline,
		Policy: config.ToolPolicy{"run_shell": config.Ask}, Timeout: time.Minute}
	if mutate != nil {
		mutate(&task)
	}
	e := &env{m: b.Machine("vm"), trace: filepath.Join(dir, "session"), events: make(chan Event, 1024)}
	var rg Guest = g
	if wrap != nil {
		rg = wrap(g)
	}
	cfg := Config{Task: task, LLM: client, Guest: rg, Trace: tw, Log: log, Emit: func(ev Event) {
		select {
		case e.events <- ev:
		default:
		}
	}}
	for _, o := range opts {
		o(&cfg)
	}
	e.r, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runner.Store(e.r)
	return e
}

func (e *env) run() chan Result {
	out := make(chan Result, 1)
	go func() { out <- e.r.Run(context.Background()) }()
	return out
}

func wait(t *testing.T, res chan Result) Result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(2 * time.Minute): // generous: the race detector slows image work a lot
		t.Fatal("the run did not end")
		return Result{}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClickLandsOnTheWidgetAndTaskCompletes: the model clicks the centre of
// a widget as it appears in the downscaled screenshot; the click lands on
// the widget in guest points; the task completes with the verifier's
// summary and the trace has one screenshot per step.
func TestClickLandsOnTheWidgetAndTaskCompletes(t *testing.T) {
	// The widget in guest points: (900, 500) to (1000, 540); in the
	// 1024x640 screenshot (scale 1024/1440): centre at (675.6, 369.8).
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("mouse_click", map[string]any{"x": 676, "y": 370})}},
		{calls: []openai.ToolCall{call("keyboard_type", map[string]any{"text": "hello"}), call("keyboard_key", map[string]any{"key": "return"})}},
	}, done(true, "Clicked Save and typed hello.")...)...)
	e := newEnv(t, l, nil)
	e.m.Driver().SetWidgets([]fake.Widget{{Name: "Save", Frame: protocol.Rect{X: 900, Y: 500, W: 100, H: 40}, Color: color.RGBA{200, 0, 0, 255}}})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted || res.Summary != "Clicked Save and typed hello." || res.Success == nil || !*res.Success || res.Steps != 3 {
		t.Fatalf("result = %+v", res)
	}
	acts := e.m.Driver().Actions()
	if len(acts) != 3 || acts[0].Kind != "click" || acts[1].Text != "hello" || acts[2].Text != "return" {
		t.Fatalf("actions = %+v", acts)
	}
	if w, ok := e.m.Driver().WidgetAt(acts[0].X, acts[0].Y); !ok || w.Name != "Save" {
		t.Fatalf("the click at (%g, %g) points missed the widget", acts[0].X, acts[0].Y)
	}
	s, err := trace.Read(e.trace)
	if err != nil {
		t.Fatal(err)
	}
	shots := 0
	for _, ev := range s.Events {
		if ev.Type == "screenshot" {
			shots++
			if _, err := os.Stat(filepath.Join(e.trace, ev.Screenshot)); err != nil {
				t.Fatalf("screenshot file: %v", err)
			}
		}
	}
	if shots != res.Steps {
		t.Fatalf("%d screenshots for %d steps", shots, res.Steps)
	}
	if len(s.Conversation) == 0 || strings.Contains(string(s.Conversation), "base64") {
		t.Fatalf("the saved conversation is missing or inlines screenshots (%d bytes)", len(s.Conversation))
	}
	if res.Usage.Total == 0 || res.CostUSD <= 0 {
		t.Fatalf("usage %+v cost %v", res.Usage, res.CostUSD)
	}
	first := l.requests()[0]
	for _, want := range []string{"Click the button and type hello", "inbox", "outbox", "offline", "run_shell", "data:image/png;base64,"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first request lacks %q", want)
		}
	}
}

func TestVerifierFailureEndsFailed(t *testing.T) {
	script := append(done(false, "Nothing was saved."), done(false, "The file is still missing.")...)
	e := newEnv(t, newLLM(t, script...), nil)
	res := wait(t, e.run())
	if res.Status != store.StatusFailed || res.Summary != "The file is still missing." || res.Success == nil || *res.Success {
		t.Fatalf("result = %+v", res)
	}
}

func TestLimits(t *testing.T) {
	e := newEnv(t, newLLM(t), func(t *Task) { t.MaxIterations = 3 })
	if r := wait(t, e.run()); r.Status != store.StatusMaxIterations || r.Steps != 3 {
		t.Fatalf("max iterations: %+v", r)
	}
	hold := make(chan struct{})
	defer close(hold)
	e = newEnv(t, newLLM(t, turn{hold: hold}), func(t *Task) { t.Timeout = 300 * time.Millisecond })
	if r := wait(t, e.run()); r.Status != store.StatusTimedOut {
		t.Fatalf("timeout: %+v", r)
	}
}

// TestProviderFailurePausesTheTask: five 500s spend the client's five
// attempts and the task pauses with the error; resumed, it retries the turn
// and goes on.
func TestProviderFailurePausesTheTask(t *testing.T) {
	l := newLLM(t, append([]turn{{status: 500}, {status: 500}, {status: 500}, {status: 500}, {status: 500}}, done(true, "recovered")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	waitFor(t, "the pause", func() bool { st, _ := e.r.Status(); return st == store.StatusPaused })
	if _, reason := e.r.Status(); !strings.Contains(reason, "HTTP 500") || !strings.Contains(reason, "after 5 attempts") {
		t.Fatalf("reason = %q", reason)
	}
	if n := len(l.requests()); n != 5 {
		t.Fatalf("%d requests before pausing, want 5", n)
	}
	e.r.Resume("")
	if r := wait(t, res); r.Status != store.StatusCompleted || r.Summary != "recovered" {
		t.Fatalf("%+v", r)
	}
}

func TestParallelTasksDoNotMix(t *testing.T) {
	l := newLLM(t)
	a := newEnv(t, l, func(t *Task) { t.Description = "TASK-ALPHA"; t.MaxIterations = 4 })
	b := newEnv(t, l, func(t *Task) { t.Description = "TASK-BRAVO"; t.MaxIterations = 4 })
	ra, rb := a.run(), b.run()
	wait(t, ra)
	wait(t, rb)
	for i, r := range l.requests() {
		if strings.Contains(r, "TASK-ALPHA") == strings.Contains(r, "TASK-BRAVO") {
			t.Fatalf("request %d carries both tasks or neither", i)
		}
	}
}

// TestRefusedKeyFailsTheTask: a provider answering 401 fails the task at
// once with the provider's refusal, instead of pausing for a resume that
// cannot help.
func TestRefusedKeyFailsTheTask(t *testing.T) {
	l := newLLM(t, turn{status: 401})
	e := newEnv(t, l, nil)
	r := wait(t, e.run())
	if r.Status != store.StatusFailed || !strings.Contains(r.Summary, "refused the API key") || !strings.Contains(r.Summary, "HTTP 401") {
		t.Fatalf("%+v", r)
	}
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d requests, want 1 (a refused key is not retried)", n)
	}
}

// TestContentFilterIsNotCompletion: a provider that stops the model's
// answer with finish_reason content_filter (often with no text, or a
// partial one) did not answer: the task pauses saying so instead of taking
// the stub for a final answer and reporting it completed.
func TestContentFilterIsNotCompletion(t *testing.T) {
	l := newLLM(t, append([]turn{{text: "I will now", finish: openai.FinishReasonContentFilter}}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	waitFor(t, "the pause", func() bool { st, _ := e.r.Status(); return st == store.StatusPaused })
	if _, reason := e.r.Status(); !strings.Contains(reason, "content filter") {
		t.Fatalf("paused for %q; want the content filter named", reason)
	}
	e.r.Resume("")
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("after resuming: %+v", r)
	}
}
