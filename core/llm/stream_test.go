package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// sse answers with server-sent events, one per data value, flushed one by
// one with pause between them, as a real provider's stream comes.
func sse(pause time.Duration, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for _, e := range events {
			if strings.HasPrefix(e, "HANG") {
				rc.Flush()
				<-r.Context().Done()
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", e)
			rc.Flush()
			time.Sleep(pause)
		}
	}
}

func chunk(delta string) string {
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

// deltas records what a stream said, restarts marked "|".
type deltas struct{ text, reasoning strings.Builder }

func (d *deltas) on(x Delta) {
	if x.Restart {
		d.text.WriteString("|")
		d.reasoning.WriteString("|")
	}
	d.text.WriteString(x.Text)
	d.reasoning.WriteString(x.Reasoning)
}

func TestChatCompletionStreams(t *testing.T) {
	s := newServer(t, sse(5*time.Millisecond,
		chunk(`{"role":"assistant","content":""}`),
		chunk(`{"reasoning_content":"The button "}`),
		chunk(`{"reasoning":"is blue."}`),
		chunk(`{"content":"Clicking "}`),
		chunk(`{"content":"it now."}`),
		// Two tool calls in one turn, their arguments in pieces.
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"click","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}`),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"keyboard_type","arguments":"{\"text\":\"hi\"}"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"10,\"y\":20}"}}]}`),
		`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940}}`,
		"[DONE]"))
	c := client(t, s, nil)
	var d deltas
	r, err := c.CompleteStream(context.Background(), userTurn, d.on)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.text.String(); got != "|Clicking it now." {
		t.Errorf("streamed text %q", got)
	}
	if got := d.reasoning.String(); got != "|The button is blue." {
		t.Errorf("streamed reasoning %q", got)
	}
	if r.Text != "Clicking it now." || r.Reasoning != "The button is blue." || r.Usage != (Usage{Prompt: 900, Completion: 40, Total: 940}) {
		t.Errorf("reply %+v", r)
	}
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].ID != "call_a" || string(r.ToolCalls[0].Args) != `{"x":10,"y":20}` ||
		r.ToolCalls[1].Name != "keyboard_type" || string(r.ToolCalls[1].Args) != `{"text":"hi"}` {
		t.Errorf("tool calls %+v", r.ToolCalls)
	}
	if len(r.Message.Calls()) != 2 || r.Message.Role != RoleAssistant {
		t.Errorf("message %+v", r.Message)
	}
	var req map[string]any
	json.Unmarshal(s.bodies[0], &req)
	if req["stream"] != true || fmt.Sprint(req["stream_options"]) != "map[include_usage:true]" {
		t.Errorf("request: stream %v, stream_options %v", req["stream"], req["stream_options"])
	}
}

func TestBrokenStreamsAreAskedAgain(t *testing.T) {
	done := chunk(`{"content":"ok"}`)
	for name, first := range map[string]http.HandlerFunc{
		// The connection ends before the answer does.
		"cut": sse(0, chunk(`{"content":"par"}`)),
		// The provider stops sending, holding the connection open.
		"stalled": sse(0, chunk(`{"content":"par"}`), "HANG"),
		// A chunk that is not JSON.
		"garbled": sse(0, chunk(`{"content":"par"}`), `{"choices":[{"index":0,"delta":{"content":`),
		// An answer with no choices at all.
		"empty": sse(0, `{"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`, "[DONE]"),
		// The provider's own overload error, inside the stream.
		"overloaded": sse(0, `{"error":{"message":"Overloaded","type":"server_error","code":"server_error"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, first, sse(0, done, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"))
			c := client(t, s, func(c *Config) { c.Timeout = 300 * time.Millisecond })
			var d deltas
			start := time.Now()
			r, err := c.CompleteStream(context.Background(), userTurn, d.on)
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != "ok" || s.requests() != 2 {
				t.Errorf("reply %q after %d requests", r.Text, s.requests())
			}
			if got := d.text.String(); !strings.HasPrefix(got, "|") || !strings.HasSuffix(got, "|ok") {
				t.Errorf("streamed %q: want the second attempt to restart the text", got)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %s", el)
			}
		})
	}
}

func TestStreamErrorsAreClassified(t *testing.T) {
	s := newServer(t, sse(0, `{"error":{"message":"This model's maximum context length is 32768 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`))
	c := client(t, s, nil)
	_, err := c.CompleteStream(context.Background(), userTurn, func(Delta) {})
	if !IsContextOverflow(err) || s.requests() != 1 {
		t.Fatalf("err %v after %d requests: want a context overflow, not retried", err, s.requests())
	}
	if !strings.Contains(err.Error(), "maximum context length") {
		t.Errorf("err %q does not say what the provider said", err)
	}

	// A content filter's finish reason is reported as such, never a completion.
	s = newServer(t, sse(0, chunk(`{"content":"I will"}`), `{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`, "[DONE]"))
	c = client(t, s, nil)
	if _, err := c.CompleteStream(context.Background(), userTurn, func(Delta) {}); err == nil || !strings.Contains(err.Error(), "content filter") {
		t.Errorf("content filter: %v", err)
	}
}

func TestStreamIsBounded(t *testing.T) {
	// One line longer than maxStreamLine: an error, not the helper's memory.
	huge := `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", maxStreamLine) + `"}}]}`
	s := newServer(t, sse(0, huge))
	c := client(t, s, func(c *Config) { c.MaxAttempts = 1 })
	_, err := c.CompleteStream(context.Background(), userTurn, func(Delta) {})
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err %v", err)
	}
	// A tool call index far past the calls so far is refused, not allocated.
	s = newServer(t, sse(0, chunk(`{"tool_calls":[{"index":100000000,"id":"x","function":{"name":"click","arguments":"{}"}}]}`), "[DONE]"))
	c = client(t, s, func(c *Config) { c.MaxAttempts = 1 })
	if _, err := c.CompleteStream(context.Background(), userTurn, func(Delta) {}); err == nil || !strings.Contains(err.Error(), "tool call") {
		t.Fatalf("err %v", err)
	}
}

func TestPlainAnswerToAStreamedRequest(t *testing.T) {
	// Servers that do not stream answer with one JSON body: read as such.
	s := newServer(t, reply("Done.", openai.ToolCall{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "wait", Arguments: `{"seconds":1}`}}))
	c := client(t, s, nil)
	r, err := c.CompleteStream(context.Background(), userTurn, func(Delta) {})
	if err != nil || r.Text != "Done." || len(r.ToolCalls) != 1 || r.Usage.Total != 120 {
		t.Fatalf("reply %+v, %v", r, err)
	}
}

// responsesTurn is a conversation with every kind of message the agent
// sends: instructions, a screenshot, a tool call and its result.
var responsesTurn = Request{System: "You operate a computer.", Messages: []Message{
	UserMessage(Text("Task: click OK"), ImageBlock(&Image{MediaType: "image/png", Data: "AAAA", Width: 1, Height: 1})),
	{Role: RoleAssistant, Content: []Block{Text("Clicking."), {Type: BlockToolCall, Call: &ToolCall{ID: "call_1", Name: "click", Args: json.RawMessage(`{"x":1,"y":2}`)}}}},
	UserMessage(Block{Type: BlockToolResult, Result: &ToolResult{CallID: "call_1", Content: []Block{Text("Clicked at (1, 2).")}}}),
}, Tools: []Tool{{Name: "click", Description: "Click a point.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}}`)}}}

func TestResponsesBackendStreams(t *testing.T) {
	ev := func(typ, rest string) string { return `{"type":"` + typ + `"` + rest + `}` }
	s := newServer(t, sse(2*time.Millisecond,
		ev("response.created", `,"response":{"id":"resp_1","status":"in_progress","output":[]}`),
		ev("response.output_item.added", `,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}`),
		ev("response.reasoning_summary_text.delta", `,"item_id":"rs_1","delta":"The OK button "`),
		ev("response.reasoning_summary_text.delta", `,"item_id":"rs_1","delta":"is at the bottom."`),
		ev("response.output_text.delta", `,"item_id":"msg_1","delta":"Pressing "`),
		ev("response.output_text.delta", `,"item_id":"msg_1","delta":"OK."`),
		ev("response.function_call_arguments.delta", `,"item_id":"fc_1","delta":"{\"x\":5"`),
		ev("response.output_item.done", `,"output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_2","name":"click","arguments":"{\"x\":5,\"y\":6}"}`),
		ev("response.completed", `,"response":{"id":"resp_1","status":"completed","output":[`+
			`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"The OK button is at the bottom."}]},`+
			`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Pressing OK.","annotations":[]}]},`+
			`{"id":"fc_1","type":"function_call","call_id":"call_2","name":"click","arguments":"{\"x\":5,\"y\":6}"}],`+
			`"usage":{"input_tokens":1500,"output_tokens":60,"total_tokens":1560}}`)))
	c := client(t, s, func(c *Config) { c.Backend = BackendResponses; c.ReasoningEffort = "high" })
	var d deltas
	r, err := c.CompleteStream(context.Background(), responsesTurn, d.on)
	if err != nil {
		t.Fatal(err)
	}
	if d.text.String() != "|Pressing OK." || d.reasoning.String() != "|The OK button is at the bottom." {
		t.Errorf("streamed %q / %q", d.text.String(), d.reasoning.String())
	}
	if r.Text != "Pressing OK." || r.Reasoning != "The OK button is at the bottom." || r.Usage != (Usage{Prompt: 1500, Completion: 60, Total: 1560}) {
		t.Errorf("reply %+v", r)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "call_2" || string(r.ToolCalls[0].Args) != `{"x":5,"y":6}` {
		t.Errorf("tool calls %+v", r.ToolCalls)
	}

	// The request, in the Responses API's shape.
	var req struct {
		Model     string           `json:"model"`
		Stream    bool             `json:"stream"`
		Store     *bool            `json:"store"`
		Input     []map[string]any `json:"input"`
		Tools     []map[string]any `json:"tools"`
		Reasoning map[string]any   `json:"reasoning"`
		Messages  any              `json:"messages"`
	}
	if err := json.Unmarshal(s.bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	if req.Model != "gpt-test" || !req.Stream || req.Store == nil || *req.Store || req.Messages != nil {
		t.Errorf("request %s", s.bodies[0])
	}
	want := []string{
		`{"content":"You operate a computer.","role":"system","type":"message"}`,
		`{"content":[{"text":"Task: click OK","type":"input_text"},{"detail":"high","image_url":"data:image/png;base64,AAAA","type":"input_image"}],"role":"user","type":"message"}`,
		`{"content":"Clicking.","role":"assistant","type":"message"}`,
		`{"arguments":"{\"x\":1,\"y\":2}","call_id":"call_1","name":"click","type":"function_call"}`,
		`{"call_id":"call_1","output":"Clicked at (1, 2).","type":"function_call_output"}`,
	}
	if len(req.Input) != len(want) {
		t.Fatalf("input has %d items: %s", len(req.Input), s.bodies[0])
	}
	for i, w := range want {
		if got, _ := json.Marshal(req.Input[i]); string(got) != w {
			t.Errorf("input %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if got, _ := json.Marshal(req.Tools); string(got) != `[{"description":"Click a point.","name":"click","parameters":{"properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"type":"object"},"strict":false,"type":"function"}]` {
		t.Errorf("tools %s", got)
	}
	if fmt.Sprint(req.Reasoning) != "map[effort:high summary:auto]" {
		t.Errorf("reasoning %v", req.Reasoning)
	}
	if !strings.HasSuffix(s.paths()[0], "/v1/responses") {
		t.Errorf("path %s", s.paths()[0])
	}
}

func TestResponsesBackendCompletionCheckAndFailures(t *testing.T) {
	// The completion check is not streamed; its schema goes in text.format.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"resp_2","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"{\"success\":true,\"summary\":\"OK was pressed.\"}"}]}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`)
	})
	c := client(t, s, func(c *Config) { c.Backend = BackendResponses })
	v, u, err := c.Verify(context.Background(), responsesTurn)
	if err != nil || !v.Success || v.Summary != "OK was pressed." || u.Total != 15 {
		t.Fatalf("verdict %+v %+v %v", v, u, err)
	}
	var req struct {
		Stream bool `json:"stream"`
		Text   struct {
			Format map[string]any `json:"format"`
		} `json:"text"`
	}
	json.Unmarshal(s.bodies[0], &req)
	if req.Stream || req.Text.Format["type"] != "json_schema" || req.Text.Format["name"] != "completion_check" || req.Text.Format["schema"] == nil {
		t.Errorf("request %s", s.bodies[0])
	}

	ev := func(typ, rest string) string { return `{"type":"` + typ + `"` + rest + `}` }
	for name, tc := range map[string]struct {
		h    http.HandlerFunc
		want string
		n    int
	}{
		"content filter": {sse(0, ev("response.incomplete", `,"response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I"}]}]}`)), "content filter", 1},
		"failed":         {sse(0, ev("response.failed", `,"response":{"status":"failed","error":{"code":"invalid_prompt","message":"Invalid prompt: flagged."},"output":[]}`)), "Invalid prompt: flagged.", 1},
		"overflow":       {sse(0, ev("error", `,"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."`)), "exceeds the context window", 1},
		"server error":   {sse(0, ev("error", `,"code":"server_error","message":"The server had an error."`)), "server had an error", 3},
		"never ends":     {sse(0, ev("response.output_text.delta", `,"delta":"x"`)), "ended before the answer", 3},
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, tc.h)
			c := client(t, s, func(c *Config) { c.Backend = BackendResponses; c.MaxAttempts = 3 })
			_, err := c.CompleteStream(context.Background(), responsesTurn, func(Delta) {})
			if err == nil || !strings.Contains(err.Error(), tc.want) || s.requests() != tc.n {
				t.Errorf("err %v after %d requests: want %q after %d", err, s.requests(), tc.want, tc.n)
			}
			if name == "overflow" && !IsContextOverflow(err) {
				t.Errorf("%v is not read as a context overflow", err)
			}
		})
	}
	if _, err := New(Config{BaseURL: "http://x/v1", Model: "m", Backend: "assistants"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("unknown backend: %v", err)
	}
}

// TestModelListSaysWhatModelsTake: OpenRouter's model list gives each
// model's window, parameters and input modalities; a model without
// "image" is a model without vision, one the list says nothing of is
// unknown.
func TestModelListSaysWhatModelsTake(t *testing.T) {
	srv := newServer(t)
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[
			{"id":"openai/gpt-5","context_length":400000,"supported_parameters":["tools","reasoning"],"architecture":{"input_modalities":["text","image","file"]}},
			{"id":"deepseek/deepseek-chat","context_length":163840,"supported_parameters":["tools"],"architecture":{"input_modalities":["text"]}},
			{"id":"local-model"}]}`)
	})
	models, err := client(t, srv, nil).Models(context.Background())
	if err != nil || len(models) != 3 {
		t.Fatalf("models %+v, %v", models, err)
	}
	vision := map[string]string{}
	for _, m := range models {
		vision[m.ID] = "unknown"
		if m.Vision != nil {
			vision[m.ID] = fmt.Sprint(*m.Vision)
		}
	}
	if vision["openai/gpt-5"] != "true" || vision["deepseek/deepseek-chat"] != "false" || vision["local-model"] != "unknown" {
		t.Fatalf("vision %v", vision)
	}
}

// TestResponsesShowsAFunctionResultsImage: an image in a function call's
// result (an image file read_file shows) goes in the input message after
// the outputs, before the step's own text and screen, as chat sends it
// after the tool messages; the output itself is the result's text.
func TestResponsesShowsAFunctionResultsImage(t *testing.T) {
	ev := func(typ, rest string) string { return `{"type":"` + typ + `"` + rest + `}` }
	done := ev("response.completed", `,"response":{"id":"resp_1","status":"completed","output":[`+
		`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"A cat.","annotations":[]}]}],`+
		`"usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`)
	photo := &Image{MediaType: "image/jpeg", Data: "BBBB", Width: 2, Height: 1}
	screen := &Image{MediaType: "image/png", Data: "CCCC", Width: 1, Height: 1}
	req := Request{Messages: []Message{
		UserText("Task: what is in the photo?"),
		{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, Call: &ToolCall{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"inbox/cat.jpg"}`)}}}},
		UserMessage(Block{Type: BlockToolResult, Result: &ToolResult{CallID: "call_1", Content: []Block{Text("inbox/cat.jpg: JPEG, an image of 2x1 pixels:"), ImageBlock(photo)}}},
			Text("Step 2."), ImageBlock(screen)),
	}}
	for _, tc := range []struct {
		name string
		req  Request
		want []string
	}{
		{"with the screen", req, []string{
			`{"call_id":"call_1","output":"inbox/cat.jpg: JPEG, an image of 2x1 pixels:","type":"function_call_output"}`,
			`{"content":[{"detail":"high","image_url":"data:image/jpeg;base64,BBBB","type":"input_image"},{"text":"Step 2.","type":"input_text"},{"detail":"high","image_url":"data:image/png;base64,CCCC","type":"input_image"}],"role":"user","type":"message"}`,
		}},
		{"alone", Request{Messages: append(slices.Clone(req.Messages[:2]), UserMessage(req.Messages[2].Content[0]))}, []string{
			`{"call_id":"call_1","output":"inbox/cat.jpg: JPEG, an image of 2x1 pixels:","type":"function_call_output"}`,
			`{"content":[{"detail":"high","image_url":"data:image/jpeg;base64,BBBB","type":"input_image"}],"role":"user","type":"message"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, sse(0, done))
			c := client(t, s, func(c *Config) { c.Backend = BackendResponses })
			if _, err := c.CompleteStream(context.Background(), tc.req, func(Delta) {}); err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Input []map[string]any `json:"input"`
			}
			if err := json.Unmarshal(s.bodies[0], &sent); err != nil {
				t.Fatal(err)
			}
			got := sent.Input[len(sent.Input)-len(tc.want):]
			for i, w := range tc.want {
				if g, _ := json.Marshal(got[i]); string(g) != w {
					t.Errorf("input %d:\n got %s\nwant %s", len(sent.Input)-len(tc.want)+i, g, w)
				}
			}
		})
	}
}
