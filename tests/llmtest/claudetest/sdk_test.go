package claudetest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
)

// sdkTool is a custom tool for the SDK.
func sdkTool(name string, props map[string]any) anthropic.BetaToolUnionParam {
	return anthropic.BetaToolUnionParam{OfTool: &anthropic.BetaToolParam{Name: name, Description: anthropic.String("The " + name + " tool."),
		InputSchema: anthropic.BetaToolInputSchemaParam{Properties: props}}}
}

var clickTools = []anthropic.BetaToolUnionParam{
	sdkTool("click", map[string]any{"x": map[string]any{"type": "integer"}, "y": map[string]any{"type": "integer"}, "label": map[string]any{"type": "string"}}),
	sdkTool("wait", map[string]any{"seconds": map[string]any{"type": "number"}}),
}

// streamed sends params with NewStreaming and accumulates the answer.
func streamed(t *testing.T, c anthropic.Client, params anthropic.BetaMessageNewParams) (anthropic.BetaMessage, error) {
	t.Helper()
	s := c.Beta.Messages.NewStreaming(context.Background(), params)
	defer s.Close()
	var m anthropic.BetaMessage
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	return m, s.Err()
}

func userText(s string) anthropic.BetaMessageParam {
	return anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(s))
}

func TestStreamWithSDK(t *testing.T) {
	srv := newServer(t)
	click := map[string]any{"x": 640, "y": 400, "label": "Ünïcode ✓ — OK"}
	srv.Script("[[click]]",
		claudetest.Reply(claudetest.Text("I will press OK and wait for the dialog to close."),
			claudetest.ToolUse("click", click), claudetest.ToolUse("wait", map[string]any{"seconds": 1.5})),
		claudetest.Text("The dialog is closed."))
	c := sdk(srv)
	params := anthropic.BetaMessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 2048, Tools: clickTools,
		System:   []anthropic.BetaTextBlockParam{{Text: "You operate a desktop."}},
		Messages: []anthropic.BetaMessageParam{userText("[[click]] Press OK.")}}
	m, err := streamed(t, c, params)
	if err != nil {
		t.Fatal(err)
	}
	if m.StopReason != "tool_use" || len(m.Content) != 3 || m.Content[0].Text != "I will press OK and wait for the dialog to close." {
		t.Fatalf("answer %s", m.RawJSON())
	}
	var got map[string]any
	if err := json.Unmarshal(m.Content[1].Input, &got); err != nil || m.Content[1].Name != "click" || got["label"] != click["label"] || got["x"] != 640.0 {
		t.Fatalf("click call %s %s (%v)", m.Content[1].Name, m.Content[1].Input, err)
	}
	if !strings.HasPrefix(m.Content[1].ID, "toolu_") || m.Content[1].ID == m.Content[2].ID || m.Content[2].Name != "wait" {
		t.Fatalf("tool call ids %q %q", m.Content[1].ID, m.Content[2].ID)
	}
	if rec := srv.Received("[[click]]"); len(rec) != 1 || rec[0].Usage.OutputTokens != int(m.Usage.OutputTokens) ||
		rec[0].Usage.InputTokens != int(m.Usage.InputTokens) || m.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v, recorded %+v", m.Usage, rec)
	}

	// The tool loop goes on: the answer as the SDK turns it into a
	// parameter, and both results.
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewBetaUserMessage(
		anthropic.NewBetaToolResultBlock(m.Content[1].ID, "clicked", false),
		anthropic.NewBetaToolResultBlock(m.Content[2].ID, "waited", false)))
	m2, err := streamed(t, c, params)
	if err != nil {
		t.Fatal(err)
	}
	if m2.StopReason != "end_turn" || m2.Content[0].Text != "The dialog is closed." {
		t.Fatalf("second answer %s", m2.RawJSON())
	}
	rec := srv.Received("[[click]]")
	// SDK v2 calls the beta endpoint without ?beta=true.
	if len(rec) != 2 || rec[1].Path != "/v1/messages" || !rec[1].Stream || rec[1].Version != "2026-10-21" {
		t.Fatalf("recorded %+v", rec)
	}
	noRefusals(t, srv)
}

// TestSSEFraming reads a stream as bytes: every event has its event: and
// data: lines, data's type is the event's name, pings are among them, and
// a tool's input arrives in several pieces.
func TestSSEFraming(t *testing.T) {
	srv := newServer(t)
	input := map[string]any{"path": "/home/user/Documents/quarterly report.pdf", "contents": strings.Repeat("line\n", 5)}
	srv.Script("[[frame]]", claudetest.Reply(claudetest.Text("Writing the file now."), claudetest.ToolUse("write", input)))
	write := map[string]any{"name": "write", "input_schema": map[string]any{"type": "object"}}
	a := post(t, srv, "/v1/messages", req("stream", true, "tools", []any{write}, "messages", msgs(user("[[frame]] Write it."))), nil)
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", a.status, a.header.Get("Content-Type"))
	}
	var names []string
	var partial strings.Builder
	pieces := 0
	sc := bufio.NewScanner(strings.NewReader(a.body))
	for sc.Scan() {
		ev := sc.Text()
		if ev == "" {
			continue
		}
		if !sc.Scan() {
			t.Fatalf("event %q without data", ev)
		}
		data := sc.Text()
		name, ok := strings.CutPrefix(ev, "event: ")
		raw, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok2 {
			t.Fatalf("not an event: %q / %q", ev, data)
		}
		var payload struct {
			Type  string
			Delta struct {
				Type        string
				PartialJSON string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(raw), &payload); err != nil || payload.Type != name {
			t.Fatalf("event %s with data %s", name, raw)
		}
		if payload.Delta.Type == "input_json_delta" {
			partial.WriteString(payload.Delta.PartialJSON)
			if payload.Delta.PartialJSON != "" {
				pieces++
			}
		}
		names = append(names, name)
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_stop ping content_block_start content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(partial.String()), &got); err != nil || got["contents"] != input["contents"] || pieces < 3 {
		t.Errorf("tool input in %d pieces: %s (%v)", pieces, partial.String(), err)
	}
}

// tampering edits an answer before it is sent back.
type tampering struct {
	name string
	edit func(p *anthropic.BetaMessageParam)
	msg  string // of the refusal
}

func TestThinkingRoundTrip(t *testing.T) {
	srv := newServer(t)
	srv.Script("[[think]]",
		claudetest.Reply(claudetest.Thinking("The OK button is at the bottom right; I should click it."), claudetest.ToolUse("click", map[string]any{"x": 1, "y": 2})),
		claudetest.Text("Clicked OK."))
	srv.Script("[[redact]]", claudetest.Reply(claudetest.RedactedThinking(), claudetest.ToolUse("wait", map[string]any{"seconds": 1})), claudetest.Text("Waited."))
	c := sdk(srv)
	for _, marker := range []string{"[[think]]", "[[redact]]"} {
		t.Run(marker, func(t *testing.T) {
			params := anthropic.BetaMessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096, Tools: clickTools,
				Thinking: anthropic.BetaThinkingConfigParamOfEnabled(2048), Messages: []anthropic.BetaMessageParam{userText(marker + " Press OK.")}}
			m, err := streamed(t, c, params)
			if err != nil {
				t.Fatal(err)
			}
			first := m.Content[0]
			switch {
			case marker == "[[think]]" && (first.Type != "thinking" || first.Thinking != "The OK button is at the bottom right; I should click it." || first.Signature == ""):
				t.Fatalf("thinking block %s", first.RawJSON())
			case marker == "[[redact]]" && (first.Type != "redacted_thinking" || first.Data == ""):
				t.Fatalf("redacted block %s", first.RawJSON())
			}
			result := anthropic.NewBetaUserMessage(anthropic.NewBetaToolResultBlock(m.Content[1].ID, "done", false))
			tamper := func(edit func(p *anthropic.BetaMessageParam)) error {
				p := m.ToParam()
				p.OfAssistant.Content = append([]anthropic.BetaContentBlockParamUnion(nil), p.OfAssistant.Content...)
				edit(&p)
				params.Messages = []anthropic.BetaMessageParam{params.Messages[0], p, result}
				_, err := streamed(t, c, params)
				return err
			}
			refusals := []tampering{
				{"dropped", func(p *anthropic.BetaMessageParam) { p.OfAssistant.Content = p.OfAssistant.Content[1:] },
					"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`"},
			}
			if marker == "[[think]]" {
				refusals = append(refusals,
					tampering{"text edited", func(p *anthropic.BetaMessageParam) {
						th := *p.OfAssistant.Content[0].OfThinking
						th.Thinking += " Or not."
						p.OfAssistant.Content[0].OfThinking = &th
					}, "messages.1.content.0: Invalid `signature` in `thinking` block"},
					tampering{"signature edited", func(p *anthropic.BetaMessageParam) {
						th := *p.OfAssistant.Content[0].OfThinking
						th.Signature = strings.ToUpper(th.Signature)
						p.OfAssistant.Content[0].OfThinking = &th
					}, "Invalid `signature` in `thinking` block"})
			} else {
				refusals = append(refusals, tampering{"data edited", func(p *anthropic.BetaMessageParam) {
					r := *p.OfAssistant.Content[0].OfRedactedThinking
					r.Data = "x" + r.Data[1:]
					p.OfAssistant.Content[0].OfRedactedThinking = &r
				}, "Invalid `data` in `redacted_thinking` block"})
			}
			before := len(srv.Refusals())
			for _, r := range refusals {
				var apiErr *anthropic.Error
				if err := tamper(r.edit); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Error(), r.msg) {
					t.Errorf("%s: %v, want 400 %q", r.name, err, r.msg)
				}
			}
			if n := len(srv.Refusals()) - before; n != len(refusals) {
				t.Errorf("%d refusals, want %d", n, len(refusals))
			}
			// Sent back as issued, the loop goes on (the refused requests
			// used no turn of the script).
			if err := tamper(func(*anthropic.BetaMessageParam) {}); err != nil {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

func TestErrorTurns(t *testing.T) {
	srv := newServer(t)
	limited := claudetest.Status(429, "rate_limit_error")
	limited.RetryAfter = "7"
	srv.Script("[[busy]]", claudetest.Status(529, "overloaded_error"), limited,
		claudetest.StreamError("overloaded_error", "Overloaded"),
		claudetest.Reply(claudetest.Text("This answer will never finish because the line drops"), claudetest.Broken()),
		claudetest.Text("Back."))
	c := sdk(srv)
	params := anthropic.BetaMessageNewParams{Model: "claude-opus-4-5", MaxTokens: 1024, Messages: []anthropic.BetaMessageParam{userText("[[busy]] Go.")}}

	var apiErr *anthropic.Error
	if _, err := c.Beta.Messages.New(context.Background(), params); !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" {
		t.Fatalf("529: %v", err)
	}
	a := post(t, srv, "/v1/messages?beta=true", req("model", "claude-opus-4-5", "messages", msgs(user("[[busy]] Go."))), nil)
	if a.status != 429 || a.errType != "rate_limit_error" || a.header.Get("retry-after") != "7" {
		t.Fatalf("429: %d %s retry-after %q", a.status, a.errType, a.header.Get("retry-after"))
	}
	_, err := streamed(t, c, params)
	if !errors.As(err, &apiErr) || apiErr.Type() != "overloaded_error" {
		t.Fatalf("in-stream error: %v", err)
	}
	m, err := streamed(t, c, params)
	if err == nil || m.StopReason != "" {
		t.Fatalf("a broken stream ended without error: %v, stop %q", err, m.StopReason)
	}
	if m, err := streamed(t, c, params); err != nil || m.Content[0].Text != "Back." {
		t.Fatalf("after the errors: %v", err)
	}
	if n := len(srv.Refusals()); n != 0 {
		t.Errorf("scripted errors counted as %d refusals", n)
	}
}

func TestModelsWithSDK(t *testing.T) {
	srv := newServer(t)
	c := sdk(srv)
	page, err := c.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != "claude-sonnet-4-5" || page.Data[1].DisplayName != "Claude Opus 4.5" || page.HasMore || page.LastID != "claude-opus-4-5" {
		t.Fatalf("models %s", page.RawJSON())
	}
	if m, err := c.Models.Get(context.Background(), "claude-opus-4-5", anthropic.ModelGetParams{}); err != nil || m.ID != "claude-opus-4-5" || m.CreatedAt.IsZero() {
		t.Fatalf("get: %v %+v", err, m)
	}
	var apiErr *anthropic.Error
	if _, err := c.Models.Get(context.Background(), "claude-9", anthropic.ModelGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Type() != "not_found_error" {
		t.Fatalf("unknown model: %v", err)
	}
}
