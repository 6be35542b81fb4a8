package webhooks

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiver is a webhook server that answers each request with the next of
// its statuses (the last one again when they run out) and records what it
// got.
type receiver struct {
	*httptest.Server
	// mu guards statuses and got.
	mu       sync.Mutex
	statuses []int
	got      []delivery
	arrived  chan struct{}
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), b})
		st := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(st)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func newSender(t *testing.T, hooks ...Hook) *Sender {
	s, err := New(Config{Hooks: func(context.Context) ([]Hook, error) { return hooks, nil },
		Log: slog.New(slog.DiscardHandler), Backoff: 10 * time.Millisecond, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ended() Payload {
	ok := true
	return Payload{Event: TaskEnded, Task: Task{ID: "t1", Title: "Report", Status: "completed", Result: "Wrote <report.txt> & left", WasSuccessful: &ok},
		Time: time.Unix(1700000000, 0).UTC()}
}

// verify checks a signature as a receiver would.
func verify(t *testing.T, secret string, d delivery) {
	t.Helper()
	if err := Verify(secret, d.header.Get(SignatureHeader), d.body, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestRetriedAfter500AndSigned(t *testing.T) {
	r := newReceiver(t, 500, 200)
	s := newSender(t)
	h := Hook{Name: "ci", URL: r.URL + "/hook?token=x", Format: JSON, Secret: "s3cret"}
	status, attempts, err := s.Send(t.Context(), h, ended(), 5)
	if err != nil || status != 200 || attempts != 2 {
		t.Fatalf("Send = %d, %d, %v; want 200 after 2 attempts", status, attempts, err)
	}
	got := r.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2", len(got))
	}
	for _, d := range got {
		verify(t, "s3cret", d)
		if d.header.Get(EventHeader) != "task.ended" || d.header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", d.header)
		}
	}
	var p Payload
	if err := json.Unmarshal(got[1].body, &p); err != nil || p.Event != TaskEnded || p.Task.ID != "t1" || p.Task.Result != "Wrote <report.txt> & left" ||
		p.Task.Status != "completed" || p.Task.WasSuccessful == nil || !*p.Task.WasSuccessful {
		t.Fatalf("payload %s: %v", got[1].body, err)
	}
	// A body changed on the way, an old signature and another secret fail.
	tampered := []byte(strings.Replace(string(got[1].body), "completed", "failed", 1))
	sig := got[1].header.Get(SignatureHeader)
	if err := Verify("s3cret", sig, tampered, time.Minute); err == nil {
		t.Fatal("a tampered body verifies")
	}
	if err := Verify("other", sig, got[1].body, time.Minute); err == nil {
		t.Fatal("another secret verifies")
	}
	if err := Verify("s3cret", Sign("s3cret", time.Now().Add(-time.Hour).Unix(), got[1].body), got[1].body, time.Minute); err == nil {
		t.Fatal("an hour-old signature verifies")
	}
	if err := Verify("s3cret", "v1=abc", got[1].body, time.Minute); err == nil {
		t.Fatal("a malformed signature verifies")
	}
}

func TestNotRetried(t *testing.T) {
	for _, status := range []int{400, 404, 302} {
		r := newReceiver(t, status, 200)
		got, attempts, err := newSender(t).Send(t.Context(), Hook{Name: "x", URL: r.URL}, ended(), 5)
		if err == nil || got != status || attempts != 1 || len(r.deliveries()) != 1 {
			t.Fatalf("answer %d: Send = %d, %d, %v after %d deliveries; want one attempt and an error", status, got, attempts, err, len(r.deliveries()))
		}
	}
}

func TestRetryAfterAndGivingUp(t *testing.T) {
	r := newReceiver(t, 429, 503)
	start := time.Now()
	status, attempts, err := newSender(t).Send(t.Context(), Hook{Name: "x", URL: r.URL}, ended(), 3)
	if err == nil || status != 503 || attempts != 3 || len(r.deliveries()) != 3 {
		t.Fatalf("Send = %d, %d, %v; want 503 after 3 attempts", status, attempts, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v with a 10 ms backoff", d)
	}
	// Retry-After is honoured (within a minute).
	var mu sync.Mutex
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		times = append(times, time.Now())
		if len(times) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
		}
	}))
	defer srv.Close()
	if _, n, err := newSender(t).Send(t.Context(), Hook{Name: "x", URL: srv.URL}, ended(), 3); err != nil || n != 2 {
		t.Fatalf("Send after Retry-After: %d attempts, %v", n, err)
	}
	if gap := times[1].Sub(times[0]); gap < 900*time.Millisecond {
		t.Fatalf("retried %v after a Retry-After of 1 s", gap)
	}
	if retryAfterOf("100000") != maxRetryAfter {
		t.Fatal("a huge Retry-After is not capped")
	}
}

func TestNoAnswerIsRetried(t *testing.T) {
	// A server that never answers: each attempt times out.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	s, _ := New(Config{Hooks: func(context.Context) ([]Hook, error) { return nil, nil }, Log: slog.New(slog.DiscardHandler),
		Backoff: 10 * time.Millisecond, Timeout: 100 * time.Millisecond})
	status, attempts, err := s.Send(t.Context(), Hook{Name: "x", URL: srv.URL + "/secret-path"}, ended(), 2)
	if err == nil || status != 0 || attempts != 2 {
		t.Fatalf("Send = %d, %d, %v; want no answer after 2 attempts", status, attempts, err)
	}
	if strings.Contains(err.Error(), "secret-path") {
		t.Fatalf("the error names the path: %v", err)
	}
}

func TestShapes(t *testing.T) {
	p := ended()
	b, err := Body(Slack, p)
	if err != nil {
		t.Fatal(err)
	}
	var sl map[string]any
	json.Unmarshal(b, &sl)
	if len(sl) != 1 || sl["text"] != "Task “Report” completed\n>Wrote &lt;report.txt&gt; &amp; left" {
		t.Fatalf("slack body %s", b)
	}
	q := Payload{Event: TaskQuestion, Task: Task{ID: "t", Title: "T", Status: "running"},
		Question: &Question{ID: "q", Text: "Which file? @everyone " + strings.Repeat("x", 5000), Options: []string{"a", "b"}}}
	b, _ = Body(Discord, q)
	var dc struct {
		Content string `json:"content"`
		Embeds  []struct {
			Title, Description string
		} `json:"embeds"`
		AllowedMentions struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	}
	if err := json.Unmarshal(b, &dc); err != nil {
		t.Fatal(err)
	}
	if dc.Content != "Task “T” asks a question" || len(dc.Embeds) != 1 || !strings.HasPrefix(dc.Embeds[0].Description, "Which file?") ||
		!strings.HasSuffix(dc.Embeds[0].Description, "Options: a / b") || len([]rune(dc.Embeds[0].Description)) > 2000 ||
		dc.AllowedMentions.Parse == nil || len(dc.AllowedMentions.Parse) != 0 {
		t.Fatalf("discord body %s", b)
	}
	b, _ = Body(JSON, Payload{Event: TaskPermission, Task: Task{ID: "t", Title: "T"}, Permission: &Permission{ID: "p", Tool: "run_shell", Details: "rm -rf x"}})
	var gen map[string]any
	json.Unmarshal(b, &gen)
	if perm, _ := gen["permission"].(map[string]any); perm["tool"] != "run_shell" || gen["event"] != "task.permission" || gen["question"] != nil {
		t.Fatalf("json body %s", b)
	}
	if _, err := Body("xml", p); err == nil {
		t.Fatal("an unknown format has a body")
	}
}

func TestChecks(t *testing.T) {
	for _, bad := range []string{"ftp://example.com/x", "file:///etc/passwd", "example.com/hook", "https://", "http://user:pw@example.com/", "javascript:alert(1)", ""} {
		if err := CheckURL(bad); err == nil {
			t.Errorf("CheckURL(%q) passed", bad)
		}
	}
	if err := CheckURL("ftp://example.com/x"); err == nil || !strings.Contains(err.Error(), "not http(s)") {
		t.Errorf("ftp: %v", err)
	}
	for _, good := range []string{"https://hooks.slack.com/services/T/B/X", "http://127.0.0.1:8080/hook"} {
		if err := CheckURL(good); err != nil {
			t.Errorf("CheckURL(%q): %v", good, err)
		}
	}
	if got := Redact("https://hooks.slack.com/services/T/B/X?x=1"); got != "https://hooks.slack.com/…" {
		t.Errorf("Redact = %q", got)
	}
	if _, err := CheckEvents([]string{"task.ended", "task.started"}); err == nil {
		t.Error("an unknown event passed")
	}
	if _, err := CheckFormat("teams"); err == nil {
		t.Error("an unknown format passed")
	}
	if (Hook{Events: []Event{TaskQuestion}}).Wants(TaskEnded) || !(Hook{}).Wants(TaskEnded) || !(Hook{Events: []Event{TaskQuestion}}).Wants(Test) {
		t.Error("Wants")
	}
}

func TestRunDeliversOnceAndFilters(t *testing.T) {
	r := newReceiver(t, 500, 200)
	other, off := newReceiver(t, 200), newReceiver(t, 200)
	s := newSender(t, Hook{Name: "ended", URL: r.URL, Secret: "k"}, Hook{Name: "questions", URL: other.URL, Events: []Event{TaskQuestion}},
		Hook{ID: "off", Name: "off", URL: off.URL, Disabled: true})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	s.Notify(ended())
	for range 2 {
		select {
		case <-r.arrived:
		case <-time.After(5 * time.Second):
			t.Fatal("the notice was not delivered")
		}
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong third delivery
	cancel()
	<-done
	if n := len(r.deliveries()); n != 2 {
		t.Fatalf("%d deliveries, want a failed one and a delivered one", n)
	}
	verify(t, "k", r.deliveries()[1])
	if n := len(other.deliveries()); n != 0 {
		t.Fatalf("a webhook for questions got %d task.ended", n)
	}
	if n := len(off.deliveries()); n != 0 {
		t.Fatalf("a webhook turned off got %d notices", n)
	}
	// A test is sent to it all the same, once.
	if status, err := s.Test(t.Context(), "off"); err != nil || status != 200 || len(off.deliveries()) != 1 ||
		off.deliveries()[0].header.Get(EventHeader) != string(Test) {
		t.Fatalf("Test = %d, %v", status, err)
	}
	if _, err := s.Test(t.Context(), "nope"); err == nil {
		t.Fatal("a test of an unknown webhook was sent")
	}
}

func TestFullQueueDropsAndShutdownInterrupts(t *testing.T) {
	// A receiver that hangs: the one delivery in flight holds the only
	// slot, the queue fills, and Notify still returns at once.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	s, _ := New(Config{Hooks: func(context.Context) ([]Hook, error) { return []Hook{{Name: "slow", URL: srv.URL}}, nil },
		Log: slog.New(slog.DiscardHandler), QueueSize: 2, Parallel: 1, Timeout: time.Minute, Backoff: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	start := time.Now()
	for range 50 {
		s.Notify(ended())
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Notify blocked for %v", d)
	}
	if n := len(s.queue); n > 2 {
		t.Fatalf("queue holds %d", n)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
}

// TestDiscordHasNoMaskedLinks: a result, a question or a title that holds
// Discord Markdown (a masked link, a spoiler, a heading, code) reaches
// Discord escaped: every character that would make it act is preceded by
// a backslash, so it shows as written.
func TestDiscordHasNoMaskedLinks(t *testing.T) {
	hostile := "Done. [Open the report](https://evil.example/steal) ||spoiler|| # Heading `code` **bold** <https://evil.example>"
	for _, p := range []Payload{
		{Event: TaskEnded, Task: Task{ID: "t", Title: "[Report](https://evil.example)", Status: "completed", Result: hostile}},
		{Event: TaskQuestion, Task: Task{ID: "t", Title: "T"}, Question: &Question{ID: "q", Text: hostile, Options: []string{"[yes](https://evil.example)"}}},
	} {
		b, err := Body(Discord, p)
		if err != nil {
			t.Fatal(err)
		}
		var dc struct {
			Content string `json:"content"`
			Embeds  []struct{ Description string }
		}
		if err := json.Unmarshal(b, &dc); err != nil || len(dc.Embeds) != 1 {
			t.Fatalf("body %s: %v", b, err)
		}
		for _, text := range []string{dc.Content, dc.Embeds[0].Description} {
			for i := 0; i < len(text); i++ {
				if strings.IndexByte("[]()|`*#<>", text[i]) >= 0 && (i == 0 || text[i-1] != '\\') {
					t.Fatalf("%q is live at %d in %q", text[i], i, text)
				}
			}
		}
		if !strings.Contains(dc.Embeds[0].Description, `\[`) {
			t.Fatalf("the text is gone: %q", dc.Embeds[0].Description)
		}
	}
}
