package claudetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
)

// TestPromptCache follows one conversation through the simulated cache:
// written at a breakpoint, read back, extended, read again through the
// lookback, lost past 20 blocks, and not written below the minimum.
func TestPromptCache(t *testing.T) {
	srv := newServer(t)
	rules := strings.Repeat("Rule. ", 1334)[:8000] // 2000 tokens
	system := []any{cached(text(rules))}
	usage := func(body map[string]any) claudetest.Usage {
		t.Helper()
		m := post(t, srv, "/v1/messages", body, nil).message(t)
		u := m.Usage
		if got := int(u.CacheCreation.Ephemeral5mInputTokens + u.CacheCreation.Ephemeral1hInputTokens); got != int(u.CacheCreationInputTokens) {
			t.Errorf("cache_creation split %d != %d", got, u.CacheCreationInputTokens)
		}
		return claudetest.Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
			CacheCreationInputTokens: int(u.CacheCreationInputTokens), CacheReadInputTokens: int(u.CacheReadInputTokens)}
	}
	check := func(name string, u claudetest.Usage, input, created, read int) {
		t.Helper()
		if u.InputTokens != input || u.CacheCreationInputTokens != created || u.CacheReadInputTokens != read {
			t.Errorf("%s: input %d, created %d, read %d; want %d, %d, %d", name, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, input, created, read)
		}
	}
	// "question one" is 12 bytes, 3 tokens.
	check("first request", usage(req("system", system, "messages", msgs(user("question one")))), 3, 2000, 0)
	check("same system", usage(req("system", system, "messages", msgs(user("question two!!")))), 4, 0, 2000)

	// A breakpoint on the last message caches the conversation so far:
	// answer (2 tokens) and follow up (3) after what was read.
	convo := []any{user("question one"), assistant("answer"), user(cached(text("follow up")))}
	check("conversation", usage(req("system", system, "messages", convo)), 0, 8, 2000)
	// The breakpoint moves on; the old one is found within 20 blocks.
	convo = []any{user("question one"), assistant("answer"), user(text("follow up")), assistant("more"), user(cached(text("again")))}
	check("moved breakpoint", usage(req("system", system, "messages", convo)), 0, 3, 2008)

	// 25 blocks later the last breakpoint is out of reach: only the
	// system prompt is read (25 blocks of 2 tokens, "ok" 1).
	var many []any
	for i := range 25 {
		many = append(many, text(fmt.Sprintf("block %02d", i)))
	}
	many[24] = cached(many[24].(map[string]any))
	long := append(convo[:len(convo)-1:len(convo)-1], user(text("again")), assistant("ok"), user(many...))
	check("past the lookback", usage(req("system", system, "messages", long)), 0, 62, 2000)

	// Below 1024 tokens nothing is written.
	short := []any{cached(text(strings.Repeat("x", 400)))}
	check("below the minimum", usage(req("system", short, "messages", msgs(user("question one")))), 103, 0, 0)

	// A one-hour breakpoint is written as such.
	hour := []any{cached(text(strings.Repeat("Hour. ", 700)), "1h")} // 4200 bytes, 1050 tokens
	m := post(t, srv, "/v1/messages", req("system", hour, "messages", msgs(user("question one"))), nil).message(t)
	if m.Usage.CacheCreation.Ephemeral1hInputTokens != 1050 || m.Usage.CacheCreationInputTokens != 1050 {
		t.Errorf("1h write: %s", m.Usage.RawJSON())
	}
	noRefusals(t, srv)
}

// TestPromptCachePerKey: the cache is the API key's.
func TestPromptCachePerKey(t *testing.T) {
	srv := claudetest.New(t) // any key
	body := req("system", []any{cached(text(strings.Repeat("k", 8000)))})
	for i, c := range []struct {
		key        string
		read, made int64
	}{{"sk-ant-a", 0, 2000}, {"sk-ant-b", 0, 2000}, {"sk-ant-a", 2000, 0}} {
		m := post(t, srv, "/v1/messages", body, map[string]string{"x-api-key": c.key}).message(t)
		if m.Usage.CacheReadInputTokens != c.read || m.Usage.CacheCreationInputTokens != c.made {
			t.Errorf("request %d with %s: %s", i, c.key, m.Usage.RawJSON())
		}
	}
}

func TestDefaultsAndVerdict(t *testing.T) {
	srv := newServer(t)
	srv.Script("[[verdict]]", claudetest.Text("I looked at the folder."), claudetest.Verdict(false, "The file is missing."))
	forced := func(marker string) map[string]any {
		return req("tools", []any{waitTool, reportTool}, "tool_choice", map[string]any{"type": "tool", "name": "report"},
			"messages", msgs(user(marker+" Was the task done?")))
	}
	input := func(m anthropic.BetaMessage) map[string]any {
		var in map[string]any
		if len(m.Content) != 1 || m.Content[0].Type != "tool_use" || m.Content[0].Name != "report" || m.StopReason != "tool_use" {
			t.Fatalf("not a report call: %s", m.RawJSON())
		}
		json.Unmarshal(m.Content[0].Input, &in)
		return in
	}
	if in := input(post(t, srv, "/v1/messages", forced("no script"), nil).message(t)); in["success"] != true || in["summary"] != "Done." {
		t.Fatalf("default verdict %v", in)
	}
	if m := post(t, srv, "/v1/messages", req("messages", msgs(user("[[verdict]] Look."))), nil).message(t); m.Content[0].Text != "I looked at the folder." || m.StopReason != "end_turn" {
		t.Fatalf("script text %s", m.RawJSON())
	}
	if in := input(post(t, srv, "/v1/messages", forced("[[verdict]]"), nil).message(t)); in["success"] != false || in["summary"] != "The file is missing." {
		t.Fatalf("scripted verdict %v", in)
	}
	// Past its end the script gives the default answers.
	if m := post(t, srv, "/v1/messages", req("messages", msgs(user("[[verdict]] More?"))), nil).message(t); m.Content[0].Text != "Finished." {
		t.Fatalf("after the script %s", m.RawJSON())
	}
	if n := len(srv.Requests("[[verdict]]")); n != 3 {
		t.Fatalf("%d requests recorded for the script", n)
	}
	srv.Script("[[no]]", claudetest.Reply(claudetest.Text("I can't help with that."), claudetest.Refusal()), claudetest.Reply(claudetest.Text("Half an"), claudetest.MaxTokens()))
	if m := post(t, srv, "/v1/messages", req("messages", msgs(user("[[no]]"))), nil).message(t); m.StopReason != "refusal" {
		t.Fatalf("refusal %s", m.RawJSON())
	}
	if m := post(t, srv, "/v1/messages", req("messages", msgs(user("[[no]]"))), nil).message(t); m.StopReason != "max_tokens" || m.Content[0].Text != "Half an" {
		t.Fatalf("max_tokens %s", m.RawJSON())
	}
	noRefusals(t, srv)
}

func TestHoldAndRepeat(t *testing.T) {
	srv := newServer(t)
	hold := make(chan struct{})
	busy := claudetest.Text("Still working.")
	busy.Hold, busy.Repeat = hold, true
	srv.Script("[[busy]]", busy)
	done := make(chan answer, 1)
	go func() { done <- post(t, srv, "/v1/messages", req("messages", msgs(user("[[busy]]"))), nil) }()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Count() == 0 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("answered before the hold was released")
	default:
	}
	close(hold)
	if a := <-done; a.message(t).Content[0].Text != "Still working." {
		t.Fatalf("held answer %s", a.body)
	}
	for range 2 {
		if a := post(t, srv, "/v1/messages", req("messages", msgs(user("[[busy]]"))), nil); a.message(t).Content[0].Text != "Still working." {
			t.Fatalf("repeated answer %s", a.body)
		}
	}
}

// TestScriptsHeldToTheModel: an answer the real model could not give
// fails the test that scripted it.
func TestScriptsHeldToTheModel(t *testing.T) {
	computer := computerTool("computer_20250124", 1280, 800)
	thinking := map[string]any{"type": "enabled", "budget_tokens": 2048}
	for _, c := range []struct {
		name string
		turn claudetest.Turn
		body map[string]any
		msg  string
	}{
		{"undeclared tool", claudetest.ToolUse("delete_everything", map[string]any{}), req("tools", []any{waitTool}), "does not declare"},
		{"zoom on 20250124", claudetest.Computer("zoom", map[string]any{"region": []int{0, 0, 10, 10}}), req("tools", []any{computer}), `computer action "zoom"`},
		{"click off screen", claudetest.Computer("left_click", map[string]any{"coordinate": []int{1280, 10}}), req("tools", []any{computer}), "outside the declared 1280x800 display"},
		{"thinking when off", claudetest.Reply(claudetest.Thinking("Hmm."), claudetest.Text("Hi.")), req(), "without extended thinking"},
		{"no thinking when on", claudetest.Text("Hi."), req("max_tokens", 4096, "thinking", thinking), "begins with thinking"},
		{"verdict unforced", claudetest.Verdict(true, "ok"), req("tools", []any{reportTool}), "forces none"},
		{"text when forced", claudetest.Text("Sure."), req("tools", []any{reportTool}, "tool_choice", map[string]any{"type": "any"}), "forces a tool call"},
		{"parallel when not allowed", claudetest.Reply(claudetest.ToolUse("wait", map[string]any{}), claudetest.ToolUse("wait", map[string]any{})),
			req("tools", []any{waitTool}, "tool_choice", map[string]any{"type": "auto", "disable_parallel_tool_use": true}), "disable_parallel_tool_use"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			srv := claudetest.New(rec)
			srv.Script("[[s]]", c.turn)
			body := c.body
			body["messages"] = msgs(user("[[s]] Go."))
			hdr := map[string]string{"anthropic-beta": "computer-use-2025-01-24"}
			a := post(t, srv, "/v1/messages", body, hdr)
			errs := rec.errors()
			if a.status != 500 || len(errs) != 1 || !strings.Contains(errs[0], c.msg) {
				t.Fatalf("status %d, test errors %q, want one with %q", a.status, errs, c.msg)
			}
		})
	}
}

// TestScreenshotsWithSDK drives the computer tool the way an agent loop
// does and checks the screenshot's recorded size against the display.
func TestScreenshotsWithSDK(t *testing.T) {
	srv := newServer(t)
	srv.Script("[[screen]]", claudetest.Reply(claudetest.Text("Clicking Save."), claudetest.Computer("left_click", map[string]any{"coordinate": []int{1000, 700}})),
		claudetest.Text("Saved."))
	c := sdk(srv)
	params := anthropic.BetaMessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Betas:    []anthropic.AnthropicBeta{anthropic.AnthropicBetaComputerUse2025_01_24},
		Tools:    []anthropic.BetaToolUnionParam{{OfComputerUseTool20250124: &anthropic.BetaToolComputerUse20250124Param{DisplayWidthPx: 1280, DisplayHeightPx: 800}}},
		Messages: []anthropic.BetaMessageParam{userText("[[screen]] Save the file.")}}
	m, err := c.Beta.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Action     string
		Coordinate []int
	}
	if json.Unmarshal(m.Content[1].Input, &in); m.Content[1].Name != "computer" || in.Action != "left_click" || in.Coordinate[0] != 1000 {
		t.Fatalf("computer call %s", m.RawJSON())
	}
	shot := anthropic.BetaToolResultBlockParam{ToolUseID: m.Content[1].ID, Content: []anthropic.BetaToolResultBlockParamContentUnion{
		{OfText: &anthropic.BetaTextBlockParam{Text: "Clicked."}},
		{OfImage: &anthropic.BetaImageBlockParam{Source: anthropic.BetaImageBlockParamSourceUnion{OfBase64: &anthropic.BetaBase64ImageSourceParam{
			Data: encoded(t, "png", 1280, 800), MediaType: anthropic.BetaBase64ImageSourceMediaTypeImagePNG}}}},
	}}
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewBetaUserMessage(anthropic.BetaContentBlockParamUnion{OfToolResult: &shot}))
	if m, err := c.Beta.Messages.New(context.Background(), params); err != nil || m.Content[0].Text != "Saved." {
		t.Fatalf("second turn: %v", err)
	}
	rec := srv.Received("[[screen]]")
	if len(rec) != 2 || len(rec[1].Images) != 1 {
		t.Fatalf("recorded %d requests", len(rec))
	}
	im := rec[1].Images[0]
	if im.Width != 1280 || im.Height != 800 || im.MediaType != "image/png" || im.Path != "messages.2.content.0.tool_result.content.1" || im.Bytes == 0 {
		t.Fatalf("screenshot %+v", im)
	}
	if !strings.Contains(rec[1].Header.Get("anthropic-beta"), "computer-use-2025-01-24") {
		t.Fatalf("beta header %q", rec[1].Header.Get("anthropic-beta"))
	}
	// 1280×800 is 1366 tokens of the input.
	if rec[1].Usage.InputTokens < 1366 {
		t.Errorf("input tokens %d do not count the screenshot", rec[1].Usage.InputTokens)
	}
	noRefusals(t, srv)
}

// TestStartOutsideATest: a program (the benchmark) starts the server
// without a test; a scripted turn the model could not give goes to its
// errorf, the request gets a 500, and stop closes the server.
func TestStartOutsideATest(t *testing.T) {
	var mu sync.Mutex
	var errs []string
	srv, stop := claudetest.Start(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf(format, args...))
	})
	srv.Script("[[s]]", claudetest.ToolUse("delete_everything", map[string]any{}), claudetest.Text("Hi."))
	body := req("tools", []any{waitTool})
	body["messages"] = msgs(user("[[s]] Go."))
	if a := post(t, srv, "/v1/messages", body, nil); a.status != 500 {
		t.Fatalf("an impossible turn answered %d", a.status)
	}
	if a := post(t, srv, "/v1/messages", body, nil); a.status != 200 {
		t.Fatalf("a possible turn answered %d: %s", a.status, a.body)
	}
	mu.Lock()
	if len(errs) != 1 || !strings.Contains(errs[0], "does not declare") {
		t.Errorf("errorf got %q, want one error about the undeclared tool", errs)
	}
	mu.Unlock()
	stop()
	if _, err := http.Get(srv.URL + "/v1/models"); err == nil {
		t.Error("the server still answers after stop")
	}
}
