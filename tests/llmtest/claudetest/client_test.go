package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// These tests run Hivecrew's own Anthropic client (core/llm) against the
// server: what it sends, the real API would take, and what it is sent, it
// reads.

func screen(t *testing.T, w, h int) *llm.Image {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	img, err := llm.NewImage("png", b.Bytes(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func claude(t *testing.T, s *Server, mutate func(*llm.Config)) *llm.Client {
	t.Helper()
	cfg := llm.Config{Type: llm.TypeAnthropic, BaseURL: s.URL, APIKey: "sk-ant-test", Model: "claude-sonnet-4-5",
		BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func noRefusals(t *testing.T, s *Server) {
	t.Helper()
	for _, r := range s.Refusals() {
		t.Errorf("refused (%d %s): %s", r.Status, r.Type, r.Message)
	}
}

// TestTheProjectClient: a tool loop with extended thinking and the computer
// tool. The thinking comes back signed and goes back unchanged; the
// budget is under max_tokens; the screenshots are at the declared
// display's size; at most 4 cache breakpoints, and the second request
// reads the first one's prefix from the cache; the completion check is a
// forced tool without thinking; titles and the model list work.
func TestTheProjectClient(t *testing.T) {
	s := New(t)
	s.Key = "sk-ant-test"
	s.Script("[[client]]",
		Reply(Thinking("The OK button is at the bottom right."), Computer("left_click", map[string]any{"coordinate": []int{1200, 760}})),
		Reply(Thinking("It closed. Done."), Text("I pressed OK.")),
		Verdict(true, "OK was pressed."))
	s.Title("Press OK")
	c := claude(t, s, func(c *llm.Config) { c.ReasoningEffort = "medium" })
	if c.Native() != llm.NativeAnthropic {
		t.Fatalf("native %q", c.Native())
	}
	ctx := context.Background()
	tools := []llm.Tool{{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}}
	req := llm.Request{System: "You operate a computer. " + strings.Repeat("Be careful. ", 800), Tools: tools, Computer: &llm.Display{Width: 1280, Height: 800},
		Messages: []llm.Message{llm.UserText("[[client]] Press OK."), llm.UserMessage(llm.Text("Step 1. The screen now:"), llm.ImageBlock(screen(t, 1280, 800)))}}
	var thinking strings.Builder
	first, err := c.CompleteStream(ctx, req, func(d llm.Delta) { thinking.WriteString(d.Reasoning) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(thinking.String(), "OK button") || first.Reasoning != "The OK button is at the bottom right." {
		t.Errorf("thinking streamed %q, reply %q", thinking.String(), first.Reasoning)
	}
	if len(first.ToolCalls) != 1 {
		t.Fatalf("first reply %+v", first)
	}
	call := first.ToolCalls[0]
	if call.Native != llm.NativeAnthropic || call.Action == nil || call.Action.Kind != llm.ActClick || *call.Action.Point != (llm.Point{X: 1200, Y: 760}) {
		t.Fatalf("call %+v", call)
	}
	req.Messages = append(req.Messages, first.Message, llm.UserMessage(llm.Block{Type: llm.BlockToolResult, Result: &llm.ToolResult{
		CallID: call.ID, Native: call.Native, Content: []llm.Block{llm.Text("Done."), llm.ImageBlock(screen(t, 1280, 800))}}}, llm.Text("Step 2.")))
	second, err := c.CompleteStream(ctx, req, func(llm.Delta) {})
	if err != nil || second.Text != "I pressed OK." || len(second.ToolCalls) != 0 {
		t.Fatalf("second reply %+v, %v", second, err)
	}
	if second.Usage.CacheRead == 0 || second.Usage.Prompt <= second.Usage.CacheRead {
		t.Errorf("the second request read nothing from the cache: %+v", second.Usage)
	}
	req.Messages = append(req.Messages, second.Message, llm.UserText("Was the task fully accomplished?"))
	v, _, err := c.Verify(ctx, req)
	if err != nil || !v.Success || v.Summary != "OK was pressed." {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	if title, _, err := c.Title(ctx, "Press OK"); err != nil || title != "Press OK" {
		t.Fatalf("title %q, %v", title, err)
	}
	models, err := c.Models(ctx)
	if err != nil || len(models) == 0 || !slices.ContainsFunc(models, func(m llm.ModelInfo) bool { return m.ID == "claude-sonnet-4-5" }) {
		t.Fatalf("models %+v, %v", models, err)
	}
	if err := c.Test(ctx); err != nil {
		t.Fatal(err)
	}
	noRefusals(t, s)

	got := s.Received("[[client]]")
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	for i, r := range got[:2] {
		var body struct {
			MaxTokens int `json:"max_tokens"`
			Thinking  struct {
				Type   string `json:"type"`
				Budget int    `json:"budget_tokens"`
			} `json:"thinking"`
		}
		json.Unmarshal([]byte(r.Body), &body)
		if body.Thinking.Type != "enabled" || body.Thinking.Budget < 1024 || body.Thinking.Budget >= body.MaxTokens {
			t.Errorf("request %d: thinking %+v, max_tokens %d", i, body.Thinking, body.MaxTokens)
		}
		if n := strings.Count(r.Body, `"cache_control"`); n < 2 || n > 4 {
			t.Errorf("request %d has %d cache breakpoints", i, n)
		}
		for _, img := range r.Images {
			if img.Width != 1280 || img.Height != 800 {
				t.Errorf("request %d: an image of %dx%d", i, img.Width, img.Height)
			}
		}
		if beta := r.Header.Get("anthropic-beta"); !strings.Contains(beta, "computer-use-2025-01-24") || !strings.Contains(beta, "interleaved-thinking-2025-05-14") || !strings.Contains(r.Body, `"computer_20250124"`) {
			t.Errorf("request %d: no computer tool or beta: %s", i, r.Header.Get("anthropic-beta"))
		}
	}
	if !strings.Contains(got[1].Body, `"signature"`) || !strings.Contains(got[1].Body, "The OK button is at the bottom right.") {
		t.Errorf("the thinking did not go back: %.500s", got[1].Body)
	}
	if strings.Contains(got[2].Body, `"thinking":{"type":"enabled"`) || !strings.Contains(got[2].Body, `"tool_choice":{"name":"completion_check","type":"tool"}`) {
		t.Errorf("the completion check: %.300s", got[2].Body)
	}
}

// TestOverloadsAndRateLimitsAreRetried: 529 overloaded, a 429 with its
// retry-after, an error event inside a stream and a broken stream are
// asked again; the answer that follows is the reply.
func TestOverloadsAndRateLimitsAreRetried(t *testing.T) {
	s := New(t)
	limited := Status(429, "rate_limit_error")
	limited.RetryAfter = "1"
	s.Script("[[retry]]", Status(529, "overloaded_error"), limited, StreamError("overloaded_error", "Overloaded"), Reply(Text("par"), Broken()), Text("At last."))
	var waits []time.Duration
	c := claude(t, s, func(c *llm.Config) {
		c.MaxAttempts = 6
		c.OnRetry = func(_ int, wait time.Duration, _ error) { waits = append(waits, wait) }
	})
	r, err := c.CompleteStream(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("[[retry]] hello")}}, func(llm.Delta) {})
	if err != nil || r.Text != "At last." {
		t.Fatalf("reply %+v, %v", r, err)
	}
	if len(waits) != 4 || waits[1] != time.Second {
		t.Errorf("waits %v: want 4, the second the retry-after", waits)
	}
	noRefusals(t, s)
}

// TestRefusalsAndOverflows: stop_reason refusal is an error that ends the
// step (never a reply); "prompt is too long" is a context overflow; a
// wrong key is refused at once.
func TestRefusalsAndOverflows(t *testing.T) {
	s := New(t)
	s.Script("[[refuse]]", Reply(Text("I can't"), Refusal()))
	c := claude(t, s, nil)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("[[refuse]] do it")}})
	if err == nil || !strings.Contains(err.Error(), "refused") || len(s.Received("[[refuse]]")) != 1 {
		t.Fatalf("refusal: %v after %d requests", err, len(s.Received("[[refuse]]")))
	}

	s = New(t)
	s.ContextTokens = 1000
	c = claude(t, s, nil)
	_, err = c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText(strings.Repeat("long ", 2000))}})
	if !llm.IsContextOverflow(err) {
		t.Fatalf("overflow: %v", err)
	}

	s = New(t)
	s.Key = "sk-ant-right"
	c = claude(t, s, func(c *llm.Config) { c.APIKey = "sk-ant-wrong" })
	_, err = c.Complete(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}})
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 401 || le.Attempts != 1 || !strings.Contains(err.Error(), "refused the API key") {
		t.Fatalf("wrong key: %#v", err)
	}
}

// TestZoomModelsGetTheNewerTool: a model of ZoomModels is offered
// computer_20251124 with zoom, and its zoom action is read.
func TestZoomModelsGetTheNewerTool(t *testing.T) {
	s := New(t)
	s.Script("[[zoom]]", Computer("zoom", map[string]any{"region": []int{0, 0, 640, 400}}))
	c := claude(t, s, func(c *llm.Config) { c.Model = "claude-opus-4-5" })
	r, err := c.Complete(context.Background(), llm.Request{Computer: &llm.Display{Width: 1280, Height: 800},
		Messages: []llm.Message{llm.UserText("[[zoom]] look closer")}})
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].Action == nil || r.ToolCalls[0].Action.Kind != llm.ActZoom {
		t.Fatalf("reply %+v, %v", r, err)
	}
	got := s.Received("[[zoom]]")[0]
	if !strings.Contains(got.Body, `"computer_20251124"`) || !strings.Contains(got.Header.Get("anthropic-beta"), "computer-use-2025-11-24") {
		t.Errorf("request %.300s", got.Body)
	}
	noRefusals(t, s)
}
