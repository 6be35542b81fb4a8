package faults

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// fault is how the provider misbehaves on one request.
type fault int

const (
	tooMany     fault = iota // 429 Too Many Requests
	serverError              // 500 Internal Server Error
	hang                     // no answer until the client gives up
	cut                      // 200 and half a body, then the connection closes
)

// faultyLLM is the scripted provider with faults injected in front of it:
// a request that contains a marker with faults queued gets the next fault
// instead of its script's turn.
type faultyLLM struct {
	*llmtest.Server
	// URL is the base URL to configure (ends in /v1).
	URL string

	// mu guards queued, given and held.
	mu     sync.Mutex
	queued map[string][]fault
	given  map[string]int
	held   map[string]int
	quit   chan struct{}
}

func newFaultyLLM(t *testing.T) *faultyLLM {
	f := &faultyLLM{Server: llmtest.New(t), queued: map[string][]fault{}, given: map[string]int{}, held: map[string]int{}, quit: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(func() { close(f.quit); srv.Close() })
	f.URL = srv.URL + "/v1"
	return f
}

// inject queues faults for the requests that contain marker.
func (f *faultyLLM) inject(marker string, faults ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[marker] = append(f.queued[marker], faults...)
}

// given returns how many faults requests with marker got.
func (f *faultyLLM) faulted(marker string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.given[marker]
}

// holding returns how many requests with marker hang right now.
func (f *faultyLLM) holding(marker string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[marker]
}

func (f *faultyLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if llmtest.IsTitleRequest(body) {
		f.Server.ServeHTTP(w, r) // a task's title is not its work: no fault
		return
	}
	f.mu.Lock()
	marker, next, ok := "", fault(0), false
	for m, q := range f.queued {
		if len(q) > 0 && bytes.Contains(body, []byte(m)) {
			marker, next, ok = m, q[0], true
			f.queued[m] = q[1:]
			f.given[m]++
			break
		}
	}
	f.mu.Unlock()
	if !ok {
		f.Server.ServeHTTP(w, r)
		return
	}
	switch next {
	case tooMany, serverError:
		code := map[fault]int{tooMany: http.StatusTooManyRequests, serverError: http.StatusInternalServerError}[next]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, `{"error":{"message":"`+http.StatusText(code)+` (injected)","type":"server_error"}}`)
	case hang:
		f.mu.Lock()
		f.held[marker]++
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-f.quit:
		}
		f.mu.Lock()
		f.held[marker]--
		f.mu.Unlock()
	case cut:
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n" + `{"id":"cut","object":"chat.completion","choices":[{"message":{"role":"assis`)
		buf.Flush()
		conn.Close()
	}
}

// TestLLMFaults: the provider answers 429 or 500 storms, hangs, or closes
// the connection mid-answer. A storm shorter than the client's retries
// never reaches the user; a longer one pauses the task with the
// provider's error as its reason, and resuming after the storm completes
// it; a hanging provider is given up on after its timeout, and a cancel
// interrupts a request in flight at once. No sandbox outlives its task.
func TestLLMFaults(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := newFaultyLLM(t)
	h.setup(llm.URL, 4)
	ctx := context.Background()
	// A second provider that gives up on an answer after one second.
	name, model, key, timeout := "Impatient", "scripted", "sk-test", 1.0
	if _, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &llm.URL, APIKey: &key, DefaultModelID: &model, TimeoutInterval: &timeout}); err != nil {
		t.Fatal(err)
	}
	script := func(marker string) {
		llm.Script(marker, append([]llmtest.Turn{llmtest.Tool("mouse_click", map[string]any{"x": 20, "y": 20})}, llmtest.Done("done "+marker)...)...)
	}
	// pausedBy waits for the task to pause with the provider's error, checks
	// the reason, ends the storm (nothing more is queued) and resumes it.
	pausedBy := func(t *testing.T, id, marker string, want ...string) {
		got := h.wait(id, "the pause", time.Minute, func(t wire.Task) bool { return t.Status == "paused" || terminal(t) })
		if got.Status != "paused" {
			t.Fatalf("task ended %s (%q) instead of pausing", got.Status, summary(got))
		}
		for _, w := range append(want, "LLM error: ", "(after 5 attempts)") {
			if !strings.Contains(got.StatusReason, w) {
				t.Fatalf("paused with reason %q; want it to say %q", got.StatusReason, w)
			}
		}
		if n := llm.faulted(marker); n != 5 {
			t.Fatalf("%d faulted attempts before the pause, want the client's 5", n)
		}
		if _, err := h.unix.TaskAction(ctx, id, wire.TaskAction{Action: wire.ActionResume}); err != nil {
			t.Fatal(err)
		}
	}
	completed := func(t *testing.T, id, marker string) {
		got := h.wait(id, "the task's end", time.Minute, terminal)
		if got.Status != "completed" || summary(got) != "done "+marker {
			t.Fatalf("task ended %s: %q", got.Status, summary(got))
		}
		h.noSandboxesOf([]string{got.VMID}, 5*time.Second)
	}
	storm := func(kind fault, n int) []fault {
		out := make([]fault, n)
		for i := range out {
			out[i] = kind
		}
		return out
	}

	t.Run("short 429 storm is retried away", func(t *testing.T) {
		t.Parallel()
		const m = "[[short429]]"
		script(m)
		llm.inject(m, storm(tooMany, 3)...)
		task := h.create("Click " + m)
		completed(t, task.ID, m)
		if n := llm.faulted(m); n != 3 {
			t.Fatalf("%d faulted answers, want 3", n)
		}
		act, err := h.unix.Activity(ctx, task.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range act.Events {
			if e.Data.Status == "paused" || strings.Contains(e.Data.Summary, "LLM error") {
				t.Fatalf("a storm within the retries reached the user: %s", summaries(act.Events))
			}
		}
	})
	t.Run("429 storm pauses with the reason", func(t *testing.T) {
		t.Parallel()
		const m = "[[storm429]]"
		script(m)
		llm.inject(m, storm(tooMany, 5)...)
		task := h.create("Click " + m)
		pausedBy(t, task.ID, m, "rate limiting (HTTP 429)")
		completed(t, task.ID, m)
	})
	t.Run("500 storm pauses with the reason", func(t *testing.T) {
		t.Parallel()
		const m = "[[storm500]]"
		script(m)
		llm.inject(m, storm(serverError, 5)...)
		task := h.create("Click " + m)
		pausedBy(t, task.ID, m, "the provider failed (HTTP 500)", "Internal Server Error (injected)")
		completed(t, task.ID, m)
	})
	t.Run("answers cut mid-body pause with the reason", func(t *testing.T) {
		t.Parallel()
		const m = "[[cut]]"
		script(m)
		llm.inject(m, storm(cut, 5)...)
		task := h.create("Click " + m)
		pausedBy(t, task.ID, m, "the provider's answer broke off", "unexpected EOF")
		completed(t, task.ID, m)
	})
	t.Run("hanging provider is given up on", func(t *testing.T) {
		t.Parallel()
		const m = "[[hang]]"
		script(m)
		llm.inject(m, storm(hang, 5)...)
		start := time.Now()
		task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Click " + m, ProviderName: "Impatient"})
		if err != nil {
			t.Fatal(err)
		}
		pausedBy(t, task.ID, m, "no answer within 1s")
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the pause took %s for five 1 s attempts", took)
		}
		completed(t, task.ID, m)
	})
	t.Run("cancel interrupts a hanging request", func(t *testing.T) {
		t.Parallel()
		const m = "[[hangcancel]]"
		script(m)
		llm.inject(m, hang)
		task := h.create("Click " + m)
		deadline := time.Now().Add(time.Minute)
		for llm.holding(m) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the provider")
			}
			time.Sleep(10 * time.Millisecond)
		}
		running, err := h.unix.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionCancel})
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "cancelled" || took > 2*time.Second {
			t.Fatalf("cancel answered %s after %s", got.Status, took)
		}
		h.noSandboxesOf([]string{running.VMID}, 5*time.Second)
		deadline = time.Now().Add(5 * time.Second)
		for llm.holding(m) > 0 { // the request was abandoned, not left hanging
			if time.Now().After(deadline) {
				t.Fatal("the cancelled task's request is still open")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
