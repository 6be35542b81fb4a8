package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/store"
)

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

// TestLongTaskIsCondensedEarlyForCost: a history that grows past half of
// a large window is condensed there, long before 85%, since every step
// reads it again; a prompt past half of a small window that is mostly
// tools and screens, with little history to condense, is not condensed
// step after step.
func TestLongTaskIsCondensedEarlyForCost(t *testing.T) {
	long := strings.Repeat("I look at the screen and think about what to do next. ", 40) // about 550 tokens
	for _, c := range []struct {
		name          string
		text          string
		window, steps int
		condensed     bool
	}{
		{"history", long, 40_000, 40, true},
		{"screens", "", 8_000, 14, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var script []turn
			for range c.steps {
				script = append(script, turn{text: c.text, calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}})
			}
			l := newLLM(t, append(script, done(true, "Waited.")...)...)
			e := newEnv(t, l, func(t *Task) { t.ContextTokens = c.window; t.MaxIterations = c.steps + 5 })
			r := wait(t, e.run())
			if r.Status != store.StatusCompleted || (r.Summaries > 0) != c.condensed {
				t.Fatalf("%+v, want completed, condensed %v", r, c.condensed)
			}
			largest := 0
			for _, body := range l.requests() {
				var req openai.ChatCompletionRequest
				if err := json.Unmarshal([]byte(body), &req); err != nil {
					t.Fatal(err)
				}
				tools, _ := json.Marshal(req.Tools)
				largest = max(largest, chatTokens(req)+len(tools)/4)
			}
			t.Logf("%d summaries, largest request about %d tokens (tools too) of %d", r.Summaries, largest, c.window)
			if largest <= c.window/2 {
				t.Errorf("no request passed half of the window (%d tokens): the case tests nothing", largest)
			}
			if c.condensed && largest > c.window*6/10 {
				t.Errorf("a request of about %d tokens: the history was not condensed at half of the %d-token window", largest, c.window)
			}
		})
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
