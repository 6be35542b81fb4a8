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
	"slices"
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

func TestQuestionsBlockUntilAnswered(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("ask_multiple_choice", map[string]any{"question": "Which format?", "options": []string{"PDF", "DOCX"}})}},
		{calls: []openai.ToolCall{call("ask_text_question", map[string]any{"question": "File name?"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	var q *Question
	waitFor(t, "the question", func() bool { q, _ = e.r.Pending(); return q != nil })
	if st, _ := e.r.Status(); st != store.StatusRunning || len(q.Options) != 2 {
		t.Fatalf("status %s, question %+v", st, q)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d LLM requests while the question waits, want 1", n)
	}
	if err := e.r.Answer(q.ID, "RTF"); err == nil {
		t.Fatal("an answer outside the options was accepted")
	}
	if err := e.r.Answer("stale", "PDF"); err == nil {
		t.Fatal("a stale question id was accepted")
	}
	if err := e.r.Answer(q.ID, "PDF"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the text question", func() bool { q2, _ := e.r.Pending(); return q2 != nil && q2.ID != q.ID })
	q2, _ := e.r.Pending()
	e.r.Answer(q2.ID, "report-2026")
	wait(t, res)
	reqs := l.requests()
	if !strings.Contains(reqs[1], "The user answered: PDF") || !strings.Contains(reqs[2], "The user answered: report-2026") {
		t.Fatal("the answers did not reach the model")
	}
}

func TestPermissionAskAndDeny(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "echo approved > outbox/ok.txt"})}},
		{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": "echo denied > outbox/no.txt"})}},
		{calls: []openai.ToolCall{call("open_url", map[string]any{"url": "https://example.com"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Ask, "open_url": config.Deny} })
	res := e.run()
	for _, approve := range []bool{true, false} {
		var p *Permission
		waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != "run_shell" {
			t.Fatalf("permission for %s", p.Tool)
		}
		if err := e.r.Respond(p.ID, approve); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to clear", func() bool { _, p2 := e.r.Pending(); return p2 == nil || p2.ID != p.ID })
	}
	wait(t, res)
	shared := e.m.Spec().SharedDir()
	if b, err := os.ReadFile(filepath.Join(shared, "outbox", "ok.txt")); err != nil || strings.TrimSpace(string(b)) != "approved" {
		t.Fatalf("approved command: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(shared, "outbox", "no.txt")); !os.IsNotExist(err) {
		t.Fatal("a denied command ran")
	}
	reqs := l.requests()
	if !strings.Contains(reqs[2], "the user denied run_shell") || !strings.Contains(reqs[3], "open_url is not allowed") {
		t.Fatal("the model was not told of the denials")
	}
	if strings.Contains(reqs[0], `"name":"open_url"`) {
		t.Fatal("a denied tool was offered to the model")
	}
}

func TestPauseResumeInstructionsAndTakeover(t *testing.T) {
	hold := make(chan struct{})
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 1, "y": 1})}, hold: hold},
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 2, "y": 2})}},
		{calls: []openai.ToolCall{call("mouse_move", map[string]any{"x": 3, "y": 3})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := e.run()
	waitFor(t, "the first LLM request", func() bool { return len(l.requests()) == 1 })
	// Pause while the LLM answers: its tool call is not made.
	e.r.TakeOver()
	close(hold)
	time.Sleep(200 * time.Millisecond)
	if st, reason := e.r.Status(); st != store.StatusPaused || !strings.Contains(reason, "user is in control") {
		t.Fatalf("status %s (%s)", st, reason)
	}
	if n := len(e.m.Driver().Actions()); n != 0 {
		t.Fatalf("%d actions after the takeover", n)
	}
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d LLM requests while paused", n)
	}
	e.r.Resume("Use the second monitor.")
	waitFor(t, "the next request", func() bool { return len(l.requests()) >= 2 })
	if !strings.Contains(l.requests()[1], "New instructions from the user: Use the second monitor.") {
		t.Fatal("the instructions of the resume did not reach the model")
	}
	// Instructions without pausing reach the next turn.
	e.r.Instruct("Hurry up.")
	wait(t, res)
	found := false
	for _, r := range l.requests()[2:] {
		found = found || strings.Contains(r, "Hurry up.")
	}
	if !found {
		t.Fatal("instructions added without pausing never reached the model")
	}
}

func TestCancelInterruptsInFlightWork(t *testing.T) {
	t.Run("LLM request", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		e := newEnv(t, newLLM(t, turn{hold: hold}), nil)
		res := e.run()
		time.Sleep(200 * time.Millisecond)
		t0 := time.Now()
		e.r.Cancel()
		r := wait(t, res)
		if r.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("%+v after %s", r, time.Since(t0))
		}
	})
	t.Run("guest call", func(t *testing.T) {
		e := newEnv(t, newLLM(t, turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 60})}}), nil)
		res := e.run()
		// The call has begun (on a loaded machine the model's turn may take
		// longer than any fixed pause), and has run a while.
		deadline := time.After(10 * time.Second)
		for began := false; !began; {
			select {
			case ev := <-e.events:
				began = ev.Type == "tool_call_start"
			case <-deadline:
				t.Fatal("the wait call never began")
			}
		}
		time.Sleep(300 * time.Millisecond)
		t0 := time.Now()
		e.r.Cancel()
		r := wait(t, res)
		if r.Status != store.StatusCancelled || time.Since(t0) > time.Second {
			t.Fatalf("%+v after %s", r, time.Since(t0))
		}
		// The activity says why the call ended, in words.
		var said string
		for len(e.events) > 0 {
			if ev := <-e.events; ev.Type == "tool_call_result" {
				said = ev.Summary
			}
		}
		if said != "wait interrupted: the task was cancelled" {
			t.Errorf("the interrupted call reads %q", said)
		}
	})
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

// TestPromptStopsGrowing: with old screenshots compacted, the request at
// step 40 is at most 1.5 times the one at step 5.
func TestPromptStopsGrowing(t *testing.T) {
	l := newLLM(t)
	e := newEnv(t, l, func(t *Task) { t.MaxIterations = 40 })
	if r := wait(t, e.run()); r.Status != store.StatusMaxIterations {
		t.Fatalf("%+v", r)
	}
	reqs := l.requests()
	s5, s40 := len(reqs[4]), len(reqs[39])
	t.Logf("prompt bytes: step 5 %d, step 20 %d, step 40 %d", s5, len(reqs[19]), s40)
	if float64(s40) > 1.5*float64(s5) {
		t.Fatalf("step 40 prompt is %d bytes, %.2fx step 5's %d", s40, float64(s40)/float64(s5), s5)
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

// TestOnlyOfferedToolsRun answers a prompt-injected model that calls guest
// methods it was never offered: shutdown (which powered the VM off),
// hello, health_check, a made-up name, and tools the policy denies
// (clipboard_write, run_shell). Each is refused on the host, the unknown
// ones with the list of valid tools; the guest never sees the call and
// keeps running.
func TestOnlyOfferedToolsRun(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("shutdown", map[string]any{}), call("hello", map[string]any{"protocolVersion": 1})}},
		{calls: []openai.ToolCall{call("clipboard_write", map[string]any{"text": "pwned"}), call("health_check", map[string]any{})}},
		{calls: []openai.ToolCall{call("rm_rf_everything\x1b[31m", map[string]any{}), call("run_shell", map[string]any{"command": "true"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) {
		t.Policy = config.ToolPolicy{"run_shell": config.Deny, "clipboard_write": config.Deny}
	})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("the guest was asked to act: %+v", acts)
	}
	if st := e.m.Status(); st.State != vm.StateRunning {
		t.Fatalf("the VM is %s (%s) after the calls", st.State, st.Reason)
	}
	if c, _ := e.m.Driver().ClipboardRead(context.Background()); c != "" {
		t.Fatalf("the clipboard was written: %q", c)
	}
	reqs := l.requests()
	for i, name := range map[int]string{1: "shutdown", 2: "health_check", 3: "rm_rf_everything"} {
		if !strings.Contains(reqs[i], `there is no tool \"`+name) || !strings.Contains(reqs[i], "the tools you can call are ") ||
			!strings.Contains(reqs[i], "mouse_click, mouse_drag") {
			t.Errorf("request %d does not refuse %s with the valid tools", i, name)
		}
	}
	if !strings.Contains(reqs[1], `there is no tool \"hello`) || !strings.Contains(reqs[2], "clipboard_write is not allowed for this task") {
		t.Error("hello or the denied clipboard_write was not refused")
	}
	// The refusal quotes the name with its escape spelled out (the model's
	// own message carries it raw, JSON-escaped).
	if !strings.Contains(reqs[3], `there is no tool \"rm_rf_everything\\x1b[31m\"`) {
		t.Error("the made-up name was not quoted with its escape shown")
	}
	if !strings.Contains(reqs[3], "run_shell is not allowed for this task") {
		t.Error("the denied tool was not refused as such")
	}
}

// TestClipboardAndAppTools: the clipboard and the app list are tools the
// model can call (they were guest methods it could not reach).
func TestClipboardAndAppTools(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("clipboard_write", map[string]any{"text": "copied by the agent"}), call("clipboard_read", map[string]any{}),
			call("get_frontmost_app", map[string]any{}), call("list_running_apps", map[string]any{})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	if res := wait(t, e.run()); res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if c, _ := e.m.Driver().ClipboardRead(context.Background()); c != "copied by the agent" {
		t.Fatalf("the clipboard holds %q", c)
	}
	second := l.requests()[1]
	if !strings.Contains(second, `{\"text\":\"copied by the agent\"}`) || !strings.Contains(second, `\"apps\"`) {
		t.Errorf("the model was not told the clipboard's text and the apps: %.2000s", second)
	}
}

// TestOpeningATerminalFollowsTheShellPolicy answers a model that, barred
// from run_shell (or made to ask), opens a terminal or a shell script
// instead and would type its commands there: opening a terminal, a shell
// or a script is gated by open_terminal, which follows run_shell unless
// the policy names it. The fake guest cannot resolve names (no
// resolve_app), so this is the check by name that older guests get;
// terminal_test.go has the guests that say what runs.
func TestOpeningATerminalFollowsTheShellPolicy(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "xterm"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "org.gnome.Terminal.desktop"})}},
		{calls: []openai.ToolCall{call("open_file", map[string]any{"path": "inbox/run.sh"})}},
		{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "mousepad"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Ask} })
	res := e.run()
	// xterm: asked as open_terminal, approved; the GNOME terminal: denied.
	for _, approve := range []bool{true, false} {
		var p *Permission
		waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != config.OpenTerminal {
			t.Fatalf("permission asked for %s, want %s", p.Tool, config.OpenTerminal)
		}
		if err := e.r.Respond(p.ID, approve); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the request to clear", func() bool { _, p2 := e.r.Pending(); return p2 == nil || p2.ID != p.ID })
	}
	// The script: denied too.
	var p *Permission
	waitFor(t, "a permission request", func() bool { _, p = e.r.Pending(); return p != nil })
	e.r.Respond(p.ID, false)
	wait(t, res)
	var opened []string
	for _, a := range e.m.Driver().Actions() {
		opened = append(opened, a.Text)
	}
	if strings.Join(opened, ",") != "xterm,mousepad" {
		t.Fatalf("opened %v, want xterm (approved) and mousepad (not a terminal)", opened)
	}

	// With open_terminal denied outright (run_shell allowed), nothing asks.
	l2 := newLLM(t, append([]turn{{calls: []openai.ToolCall{call("open_app", map[string]any{"name": "bash"})}}}, done(true, "ok")...)...)
	e2 := newEnv(t, l2, func(t *Task) {
		t.Policy = config.ToolPolicy{"run_shell": config.Allow, config.OpenTerminal: config.Deny}
	})
	wait(t, e2.run())
	if acts := e2.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("actions %+v", acts)
	}
	if !strings.Contains(l2.requests()[1], "opening a terminal, a shell or an interpreter is not allowed") {
		t.Fatal("the model was not told why")
	}
}

func TestTerminalNames(t *testing.T) {
	for name, want := range map[string]bool{
		"xterm": true, "XTerm": true, "/usr/bin/bash": true, "org.gnome.Terminal.desktop": true, "Terminal": true,
		"com.apple.Terminal": true, "iTerm.app": true, "python3": true, "bash -c id": true, "kitty": true,
		"mousepad": false, "chromium": false, "Firefox": false, "org.gnome.TextEditor": false, "LibreOffice Calc": false,
	} {
		if got := terminalName(name); got != want {
			t.Errorf("terminalName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestOfferedToolsAreThePolicyVocabulary: the tools offered to the model
// are exactly the ones a policy can name (core/config AgentTools), so a
// setting never names a tool that does not exist, nor misses one that does.
// The todo tool is the one exception: it only keeps the checklist the
// user sees, and is always offered.
func TestOfferedToolsAreThePolicyVocabulary(t *testing.T) {
	var names []string
	for _, d := range tools(func(string) bool { return true }, false, false) {
		if d.Name != todoSpec.name {
			t.Fatalf("%s is offered while every tool is denied", d.Name)
		}
	}
	for _, d := range tools(func(string) bool { return false }, false, false) {
		if elementGates[d.Name] == nil && d.Name != todoSpec.name { // element tools are gated by the tools they use
			names = append(names, d.Name)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(config.AgentTools))) {
		t.Fatalf("offered %v, policy names %v", names, config.AgentTools)
	}
}

// TestToolArgumentsAreCheckedLikeUserInput: model output is untrusted
// input. A point off the screenshot used to be clamped to the screen's
// edge (where close buttons sit) and reported "Done"; a made-up argument
// was dropped silently; a wrong type failed deep in the guest. Each is now
// refused before the guest hears of it, with a message that names the
// argument (and, for points, the screenshot's size).
func TestToolArgumentsAreCheckedLikeUserInput(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{
			call("mouse_click", map[string]any{"x": 1024, "y": 100}),
			call("mouse_drag", map[string]any{"fromX": 10, "fromY": 10, "toX": 30, "toY": -1}),
			call("mouse_click", map[string]any{"x": 10, "y": 10, "colour": "red"}),
			call("keyboard_type", map[string]any{"text": 5}),
			call("keyboard_key", map[string]any{"key": "a", "modifiers": []string{"ctrl"}}),
			call("scroll", map[string]any{"x": 10}),
			{ID: "c-raw", Type: "function", Function: openai.FunctionCall{Name: "mouse_move", Arguments: `[1,2]`}},
		}},
		{calls: []openai.ToolCall{call("mouse_click", map[string]any{"x": 1023.4, "y": 639})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	// Only the last, valid click (on the screenshot's last pixel) reached
	// the guest, at its last point.
	acts := e.m.Driver().Actions()
	if len(acts) != 1 || acts[0].Kind != "click" || acts[0].X != 1439 || acts[0].Y != 899 {
		t.Fatalf("the guest was asked to do %+v; want one click at (1439, 899)", acts)
	}
	second := l.requests()[1]
	for _, want := range []string{
		`mouse_click: (x, y) = (1024, 100) is off the screen: the screenshot is 1024x640 pixels, x from 0 to 1023 and y from 0 to 639`,
		`mouse_drag: (toX, toY) = (30, -1) is off the screen`,
		`mouse_click: unexpected additional properties [\"colour\"]`,
		`keyboard_type: argument text: type: 5 has type \"integer\", want \"string\"`,
		`keyboard_key: argument modifiers: enum: ctrl does not equal any of`,
		`scroll: required: missing properties: [\"y\"]`,
		`mouse_move: the arguments are not a JSON object: [1,2]`,
	} {
		if !strings.Contains(second, want) {
			t.Errorf("the model was not told %s", want)
		}
	}
	if t.Failed() {
		for _, line := range strings.Split(second, `\n`) {
			if strings.Contains(line, "Error: ") {
				t.Logf("told: %s", line)
			}
		}
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

// summaryRequests returns the requests that asked to condense the history.
func summaryRequests(reqs []string) (idx []int) {
	for i, r := range reqs {
		if strings.Contains(r, "You condense the history") {
			idx = append(idx, i)
		}
	}
	return idx
}

// TestLongTaskIsCondensed: a task whose history grows past 85% of the
// model's window (long answers, a 12k-token window) gets its earlier steps
// condensed into a summary by the model, goes on with the latest screens
// word for word, and completes; no request passes the window.
func TestLongTaskIsCondensed(t *testing.T) {
	long := strings.Repeat("I look at the screen and think about what to do next. ", 40) // about 550 tokens
	var script []turn
	for range 14 {
		script = append(script, turn{text: long, calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}})
	}
	l := newLLM(t, append(script, done(true, "Waited.")...)...)
	e := newEnv(t, l, func(t *Task) { t.ContextTokens = 12_000; t.MaxIterations = 30 })
	r := wait(t, e.run())
	if r.Status != store.StatusCompleted || r.Summaries < 1 {
		t.Fatalf("%+v, want completed after at least one summary", r)
	}
	reqs := l.requests()
	sums := summaryRequests(reqs)
	t.Logf("%d requests, summaries at %v", len(reqs), sums)
	if len(sums) != r.Summaries {
		t.Fatalf("%d summary requests, result says %d", len(sums), r.Summaries)
	}
	first := reqs[sums[0]]
	if strings.Contains(first, "data:image") || !strings.Contains(first, "I look at the screen") {
		t.Errorf("the summary request should hold the earlier steps as text, no images: %.300s", first)
	}
	next := reqs[sums[0]+1]
	if !strings.Contains(next, "Summary of the earlier steps") || !strings.Contains(next, "SUMMARY: the agent waited") {
		t.Errorf("the request after the summary does not carry it")
	}
	if len(next) >= len(reqs[sums[0]-1]) {
		t.Errorf("the request after the summary is %d bytes, not shorter than the one before it (%d)", len(next), len(reqs[sums[0]-1]))
	}
	for i, body := range reqs {
		var req openai.ChatCompletionRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		if est := chatTokens(req); est > 12_000 {
			t.Errorf("request %d is about %d tokens, past the 12k window", i, est)
		}
	}
	var condensed bool
	for len(e.events) > 0 {
		if ev := <-e.events; ev.ActivityType == "info" && strings.HasPrefix(ev.Summary, "Condensed the history") {
			condensed = true
		}
	}
	if !condensed {
		t.Error("no event told the user the history was condensed")
	}
}

// TestContextOverflowIsCondensedAndRetried: a provider that refuses the
// prompt as too long (OpenAI's context_length_exceeded) gets the history
// condensed and the same step asked again, once; the task completes
// without pausing.
func TestContextOverflowIsCondensedAndRetried(t *testing.T) {
	wait0 := turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}}
	overflow := turn{status: http.StatusBadRequest, body: `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`}
	l := newLLM(t, append([]turn{wait0, wait0, wait0, wait0, overflow}, done(true, "Done.")...)...)
	e := newEnv(t, l, nil)
	r := wait(t, e.run())
	if r.Status != store.StatusCompleted || r.Summaries != 1 {
		t.Fatalf("%+v, want completed after one summary", r)
	}
	reqs := l.requests()
	sums := summaryRequests(reqs)
	if len(sums) != 1 || sums[0] != 5 {
		t.Fatalf("summary requests at %v, want one right after the refused request 4", sums)
	}
	if !strings.Contains(reqs[6], "Summary of the earlier steps") || strings.Count(reqs[6], "data:image") > 3 {
		t.Errorf("the retried request does not carry the summary")
	}
	if e.r.Steps() != 5 {
		t.Errorf("%d steps, want 5 (the refused step 5 asked again within itself)", e.r.Steps())
	}
}

// TestShellOutputIsLive: a run_shell command's output reaches the activity
// feed while it runs, in several events, before its result; output the
// guest sends while no command runs is dropped.
func TestShellOutputIsLive(t *testing.T) {
	cmd := "for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done"
	l := newLLM(t, append([]turn{{calls: []openai.ToolCall{call("run_shell", map[string]any{"command": cmd})}}}, done(true, "Ran.")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"run_shell": config.Allow} })
	e.r.ShellOutput(json.RawMessage(`{"requestId":1,"stream":"stdout","data":"forged before any command"}`))
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("%+v", r)
	}
	var live []Event
	resultAt := -1
	for i := 0; len(e.events) > 0; i++ {
		ev := <-e.events
		switch {
		case ev.Tool == "run_shell" && strings.HasPrefix(ev.Summary, "run_shell output:"):
			live = append(live, ev)
			if resultAt >= 0 {
				t.Errorf("live output after the command's result: %+v", ev)
			}
		case ev.Type == "tool_call_result" && ev.Tool == "run_shell":
			resultAt = i
		}
		if strings.Contains(ev.Details, "forged") {
			t.Errorf("output sent while no command ran reached the feed: %+v", ev)
		}
	}
	if len(live) < 2 {
		t.Fatalf("%d live output events, want the output as it came (several): %+v", len(live), live)
	}
	var all string
	for _, ev := range live {
		all += ev.Details
	}
	if all != "line1\nline2\nline3\nline4\nline5\n" {
		t.Errorf("live output %q", all)
	}
	if !strings.Contains(live[0].Details, "line1") || strings.Contains(live[0].Details, "line5") {
		t.Errorf("the first live event holds %q: not streamed", live[0].Details)
	}
}

// TestBudgetPausesAndRaisingResumes: a task whose LLM use reaches its
// token budget pauses before its next request, saying so; resuming
// without raising it pauses again; raising it and resuming goes on.
func TestBudgetPausesAndRaisingResumes(t *testing.T) {
	wait0 := turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}}
	l := newLLM(t, append([]turn{wait0}, done(true, "Done.")...)...)
	e := newEnv(t, l, func(t *Task) { t.BudgetTokens = 100 })
	res := e.run()
	paused := func() bool {
		s, reason := e.r.Status()
		return s == store.StatusPaused && strings.HasPrefix(reason, "token budget reached: ") && strings.Contains(reason, "of 100 tokens")
	}
	waitFor(t, "the budget pause", paused)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d requests before the pause, want 1", n)
	}
	e.r.Resume("")
	time.Sleep(100 * time.Millisecond)
	waitFor(t, "the pause again (budget not raised)", paused)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d requests after resuming without a new budget, want still 1", n)
	}
	e.r.SetBudget(0, 1_000_000)
	e.r.Resume("")
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("%+v", r)
	}
}

// chatTokens estimates a chat request as the agent does (4 bytes of text a
// token, a 1024x640 screenshot 765 tokens, the tools' JSON).
func chatTokens(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += 4 + len(m.Content)/4
		for _, p := range m.MultiContent {
			if p.ImageURL != nil {
				n += 765
			} else {
				n += len(p.Text) / 4
			}
		}
		for _, c := range m.ToolCalls {
			n += (len(c.Function.Name) + len(c.Function.Arguments) + len(c.ID)) / 4
		}
	}
	b, _ := json.Marshal(req.Tools)
	return n + len(b)/4
}
