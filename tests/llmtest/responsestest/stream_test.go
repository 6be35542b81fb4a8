package responsestest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
}

// events reads a stream as OpenAI frames it: blocks of an `event:` line
// and a `data:` line whose type is the event's name, numbered from 0.
func readEvents(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		name, ok1 := strings.CutPrefix(lines[0], "event: ")
		if len(lines) != 2 || !ok1 || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("not an event block: %q", block)
		}
		var data map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &data); err != nil {
			t.Fatalf("data is not JSON: %q", lines[1])
		}
		if data["type"] != name || data["sequence_number"] != float64(len(out)) {
			t.Fatalf("event %d %q has type %v and sequence_number %v", len(out), name, data["type"], data["sequence_number"])
		}
		out = append(out, event{name, data})
	}
	return out
}

// names are the events' names, a run of the same name written once.
func names(evs []event) []string {
	var out []string
	for _, e := range evs {
		n := strings.TrimPrefix(e.name, "response.")
		if len(out) == 0 || out[len(out)-1] != n {
			out = append(out, n)
		}
	}
	return out
}

func streamed(m map[string]any) map[string]any { return with(m, "stream", true) }

func TestStreamFramingAndOrder(t *testing.T) {
	s := New(t)
	s.Script("[[stream]]", Items(Reasoning("Looking closely."), Text("Hello there world"), Call("read_file", map[string]any{"path": "ä/ö.txt"})))
	r := post(t, s, streamed(gpt5(user("[[stream]]"))))
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", r.status, r.header.Get("Content-Type"))
	}
	evs := readEvents(t, r.body)
	want := []string{"created", "in_progress",
		"output_item.added", "reasoning_summary_part.added", "reasoning_summary_text.delta", "reasoning_summary_text.done", "reasoning_summary_part.done", "output_item.done",
		"output_item.added", "content_part.added", "output_text.delta", "output_text.done", "content_part.done", "output_item.done",
		"output_item.added", "function_call_arguments.delta", "function_call_arguments.done", "output_item.done",
		"completed"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n%v\nwant\n%v", got, want)
	}
	var text, args, summary string
	argPieces := 0
	for _, e := range evs {
		switch e.name {
		case "response.output_text.delta":
			text += e.data["delta"].(string)
		case "response.function_call_arguments.delta":
			args += e.data["delta"].(string)
			argPieces++
		case "response.reasoning_summary_text.delta":
			summary += e.data["delta"].(string)
		}
	}
	if text != "Hello there world" || summary != "Looking closely." || args != `{"path":"ä/ö.txt"}` || argPieces < 2 {
		t.Errorf("deltas: %q %q %q in %d pieces", text, summary, args, argPieces)
	}
	final := evs[len(evs)-1].data["response"].(map[string]any)
	out := output(final)
	if final["status"] != "completed" || len(out) != 3 || out[2]["name"] != "read_file" || out[2]["arguments"] != args {
		t.Errorf("the completed response: %v", final)
	}
	for i, e := range evs {
		if e.name == "response.output_item.done" {
			b1, _ := json.Marshal(e.data["item"])
			b2, _ := json.Marshal(out[int(e.data["output_index"].(float64))])
			if string(b1) != string(b2) {
				t.Errorf("event %d's item %s is not the response's %s", i, b1, b2)
			}
		}
	}
	u := final["usage"].(map[string]any)
	if u["input_tokens"].(float64) == 0 || u["output_tokens_details"].(map[string]any)["reasoning_tokens"].(float64) == 0 ||
		u["total_tokens"].(float64) != u["input_tokens"].(float64)+u["output_tokens"].(float64) {
		t.Errorf("usage: %v", u)
	}
	if evs[0].data["response"].(map[string]any)["status"] != "in_progress" {
		t.Errorf("created: %v", evs[0].data)
	}
}

func TestFailures(t *testing.T) {
	s := New(t)
	s.Script("[[fail]]", StreamError("server_error", "The model broke."), Failed("rate_limit_exceeded", "Too many tokens."),
		Incomplete("max_output_tokens", Reasoning("Thinking at length.")), Broken(),
		StreamError("server_error", "Broke again."), Failed("server_error", "Failed again."), Incomplete("content_filter"), Broken())
	req := streamed(gpt5(user("[[fail]]")))

	evs := readEvents(t, post(t, s, req).body)
	if got := names(evs); !slices.Equal(got, []string{"created", "in_progress", "error"}) || evs[2].data["code"] != "server_error" || evs[2].data["message"] != "The model broke." {
		t.Errorf("an error event: %v", evs)
	}
	evs = readEvents(t, post(t, s, req).body)
	failed := evs[len(evs)-1].data["response"].(map[string]any)
	if evs[len(evs)-1].name != "response.failed" || failed["status"] != "failed" || failed["error"].(map[string]any)["code"] != "rate_limit_exceeded" {
		t.Errorf("response.failed: %v", evs[len(evs)-1])
	}
	evs = readEvents(t, post(t, s, req).body)
	last := evs[len(evs)-1]
	if last.name != "response.incomplete" || last.data["response"].(map[string]any)["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
		t.Errorf("response.incomplete: %v", last)
	}
	r := post(t, s, req)
	if r.err == nil || strings.Contains(string(r.body), "response.completed") || !strings.Contains(string(r.body), "response.output_text.delta") {
		t.Errorf("a broken stream read whole (%v): %s", r.err, r.body)
	}

	// The same turns, not streamed.
	req = gpt5(user("[[fail]]"))
	post(t, s, req).refused(t, 500, "server_error", "Broke again.")
	if m := post(t, s, req).ok(t); m["status"] != "failed" || m["error"].(map[string]any)["message"] != "Failed again." {
		t.Errorf("failed: %v", m)
	}
	if m := post(t, s, req).ok(t); m["status"] != "incomplete" || m["incomplete_details"].(map[string]any)["reason"] != "content_filter" {
		t.Errorf("incomplete: %v", m)
	}
	if r := post(t, s, req); r.err == nil {
		t.Errorf("a broken answer read whole: %s", r.body)
	}
}

func TestStatusAndRetryAfter(t *testing.T) {
	s := New(t)
	slow := Status(429)
	slow.RetryAfter = 3 * time.Second
	s.Script("[[busy]]", Status(429), slow, Status(500), Status(503), Text("At last."))
	req := gpt5(user("[[busy]]"))
	r := post(t, s, req)
	r.refused(t, 429, "rate_limit_exceeded", "Rate limit reached")
	if r.header.Get("retry-after") != "1" {
		t.Errorf("retry-after %q", r.header.Get("retry-after"))
	}
	if r := post(t, s, req); r.status != 429 || r.header.Get("retry-after") != "3" || r.header.Get("retry-after-ms") != "3000" {
		t.Errorf("%d retry-after %q", r.status, r.header.Get("retry-after"))
	}
	post(t, s, req).refused(t, 500, "", "The server had an error")
	post(t, s, req).refused(t, 503, "", "overloaded")
	if out := output(post(t, s, req).ok(t)); out[0]["content"].([]any)[0].(map[string]any)["text"] != "At last." {
		t.Errorf("after the errors: %v", out)
	}
	if s.Refusals() != 0 || s.Count() != 5 || s.Received()[0].Status != 429 {
		t.Errorf("scripted errors are answers, not refusals: %d %d %+v", s.Refusals(), s.Count(), s.Received()[0])
	}
}

// TestCacheAccounting: cached_tokens is the longest prefix seen before,
// from 1024 tokens on, in steps of 128.
func TestCacheAccounting(t *testing.T) {
	s := New(t)
	usage := func(instructions string, input ...any) Usage {
		t.Helper()
		post(t, s, with(gpt5(input...), "tools", nil, "instructions", instructions)).ok(t)
		got := s.Received()
		return got[len(got)-1].Usage
	}
	long := strings.Repeat("a", 8192) // 2048 tokens
	if u := usage(long, user("hello")); u.CachedTokens != 0 || u.InputTokens < 2048 {
		t.Errorf("a first prompt: %+v", u)
	}
	u := usage(long, user("hello again"))
	if u.CachedTokens != 2048 {
		t.Errorf("a shared 2052-token prefix: cached %d, want 2048", u.CachedTokens)
	}
	if again := usage(long, user("hello again")); again.CachedTokens != again.InputTokens-again.InputTokens%128 {
		t.Errorf("the same prompt again: %+v", again)
	}
	if u := usage(long[:4000], user("other")); u.CachedTokens != 0 {
		t.Errorf("a 1000-token prefix is below the minimum: cached %d", u.CachedTokens)
	}
	// Images count in the prefix by their tokens.
	shot := func(w, h int) any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": pngURL(t, w, h)}}}
	}
	usage(long[:1000], shot(1280, 800), user("one"))
	if u := usage(long[:1000], shot(1280, 800), user("two")); u.CachedTokens != 1152 {
		t.Errorf("250 text and 910 image tokens shared: cached %d, want 1152", u.CachedTokens)
	}
	if u := usage(long[:1000], shot(640, 400), user("two")); u.CachedTokens != 0 {
		t.Errorf("another image: cached %d", u.CachedTokens)
	}
	m := post(t, s, with(gpt5(user("hi")), "tools", nil, "instructions", long)).ok(t)["usage"].(map[string]any)
	if m["input_tokens_details"].(map[string]any)["cached_tokens"].(float64) != 2048 {
		t.Errorf("the usage sent: %v", m)
	}
}

func TestScriptsTitlesAndDefaults(t *testing.T) {
	s := New(t)
	hold := make(chan struct{})
	s.Script("[[a]]", Text("one"), Turn{items: Text("two").items, Repeat: true})
	s.Script("[[held]]", Turn{items: Text("held").items, Hold: hold})
	s.Script("[[refuse]]", Refusal("I can't help with that."))
	s.Title("Pay the bill")
	text := func(r reply) string {
		return output(r.ok(t))[0]["content"].([]any)[0].(map[string]any)["text"].(string)
	}
	title := with(gpt5(user("[[a]] Pay the bill")), "instructions", llm.TitlePrompt, "tools", nil)
	if got := text(post(t, s, title)); got != "Pay the bill" || len(s.Titles()) != 1 {
		t.Errorf("title %q, titles %d", got, len(s.Titles()))
	}
	if a, b, c := text(post(t, s, gpt5(user("[[a]]")))), text(post(t, s, gpt5(user("[[a]]")))), text(post(t, s, gpt5(user("[[a]]")))); a != "one" || b != "two" || c != "two" {
		t.Errorf("script: %q %q %q", a, b, c)
	}
	if len(s.Requests("[[a]]")) != 3 {
		t.Errorf("requests of [[a]]: %d (the title request is not one)", len(s.Requests("[[a]]")))
	}
	refusal := output(post(t, s, gpt5(user("[[refuse]]"))).ok(t))[0]["content"].([]any)[0].(map[string]any)
	if refusal["type"] != "refusal" || refusal["refusal"] != "I can't help with that." {
		t.Errorf("refusal: %v", refusal)
	}
	if got := text(post(t, s, gpt5(user("nothing scripted")))); got != "Finished." {
		t.Errorf("default: %q", got)
	}
	check := with(gpt5(user("Was it done?")), "text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "completion_check", "strict": true,
		"schema": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"success", "summary"},
			"properties": map[string]any{"success": map[string]any{"type": "boolean"}, "summary": map[string]any{"type": "string"}}}}})
	if got := text(post(t, s, check)); got != `{"success":true,"summary":"Done."}` {
		t.Errorf("default verdict: %q", got)
	}

	done := make(chan string, 1)
	go func() { done <- text(post(t, s, gpt5(user("[[held]]")))) }()
	select {
	case got := <-done:
		t.Fatalf("a held turn answered %q before its release", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	if got := <-done; got != "held" {
		t.Errorf("released: %q", got)
	}

	m := New(t)
	m.Match = func(body string) string {
		if strings.Contains(body, "invoice") {
			return "billing"
		}
		return ""
	}
	m.Script("billing", Done("Paid.")...)
	if a, b := text(post(t, m, gpt5(user("an invoice")))), text(post(t, m, check)); a != "I am done." || b != `{"success":true,"summary":"Done."}` {
		t.Errorf("match: %q %q", a, b)
	}
}

// recorder is a test that keeps its errors to be looked at.
type recorder struct {
	testing.TB
	// mu guards errs.
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestImpossibleScriptsFailTheTest: a turn the real model could not have
// given to the request is a mistake in the test, reported.
func TestImpossibleScriptsFailTheTest(t *testing.T) {
	strictCheck := map[string]any{"format": map[string]any{"type": "json_schema", "name": "completion_check", "strict": true,
		"schema": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"success"},
			"properties": map[string]any{"success": map[string]any{"type": "boolean"}}}}}
	for _, c := range []struct {
		name  string
		turn  Turn
		req   map[string]any
		words string
	}{
		{"function not offered", Call("write_file", map[string]any{"path": "a"}), gpt5(user("x")), `function "write_file"`},
		{"no computer tool", Computer(map[string]any{"type": "screenshot"}), gpt5(user("x")), "no computer_use_preview tool"},
		{"parallel calls", Items(Call("read_file", map[string]any{"path": "a"}), Call("read_file", map[string]any{"path": "b"})),
			with(gpt5(user("x")), "parallel_tool_calls", false), "parallel_tool_calls is false"},
		{"tool choice none", Call("read_file", map[string]any{"path": "a"}), with(gpt5(user("x")), "tool_choice", "none"), `tool_choice is "none"`},
		{"schema", Verdict(true, "extra summary"), with(gpt5(user("x")), "text", strictCheck), "does not fit the json_schema"},
		{"possible", Items(Call("read_file", map[string]any{"path": "a"}), Call("read_file", map[string]any{"path": "b"})), gpt5(user("x")), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			s := New(rec)
			s.Script("x", c.turn)
			post(t, s, c.req).ok(t)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			switch {
			case c.words == "" && len(rec.errs) > 0:
				t.Errorf("errors for a possible turn: %v", rec.errs)
			case c.words != "" && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], c.words)):
				t.Errorf("errors %q, want one with %q", rec.errs, c.words)
			}
		})
	}
}

// TestStartOutsideATest: a program (the benchmark) starts the server
// without a test; a scripted turn the model could not give goes to its
// errorf (and is played), and stop closes the server.
func TestStartOutsideATest(t *testing.T) {
	var mu sync.Mutex
	var errs []string
	s, stop := Start(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf(format, args...))
	})
	s.Script("x", Call("write_file", map[string]any{"path": "a"}))
	post(t, s, gpt5(user("x"))).ok(t)
	mu.Lock()
	if len(errs) != 1 || !strings.Contains(errs[0], `function "write_file"`) {
		t.Errorf("errorf got %q, want one error about the function not offered", errs)
	}
	mu.Unlock()
	stop()
	if _, err := http.Get(s.URL + "/models"); err == nil {
		t.Error("the server still answers after stop")
	}
}

// TestTheProjectClient runs Hivecrew's own Responses client against the
// server, as an OpenAI provider (stateless, its reasoning sent back
// encrypted) and as an OpenAI-compatible one in Responses mode: what it
// sends, OpenAI takes, and what it is sent, it reads.
func TestTheProjectClient(t *testing.T) {
	for _, typ := range []string{llm.TypeOpenAI, llm.TypeOpenAICompatible} {
		t.Run(typ, func(t *testing.T) {
			s := New(t)
			s.Key = "sk-test"
			s.Script("[[client]]", Items(Reasoning("Reading."), Call("read_file", map[string]any{"path": "a.txt"})), Text("It says hello."))
			s.Title("Read a file")
			c, err := llm.New(llm.Config{Type: typ, BaseURL: s.URL, APIKey: s.Key, Model: "gpt-5", Backend: llm.BackendResponses, MaxAttempts: 1, ReasoningEffort: "low"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			req := llm.Request{System: "You use a computer.", Messages: []llm.Message{llm.UserText("[[client]] Read a.txt.")},
				Tools: []llm.Tool{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
			var streamed strings.Builder
			first, err := c.CompleteStream(ctx, req, func(d llm.Delta) { streamed.WriteString(d.Reasoning) })
			if err != nil {
				t.Fatal(err)
			}
			if len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "read_file" || string(first.ToolCalls[0].Args) != `{"path":"a.txt"}` || !strings.Contains(streamed.String(), "Reading.") {
				t.Fatalf("first reply: %+v (streamed reasoning %q)", first, streamed.String())
			}
			// The result shows an image (an image file read_file read):
			// it goes in the input message after the output.
			picture := &llm.Image{MediaType: "image/png", Width: 64, Height: 48, Data: strings.TrimPrefix(pngURL(t, 64, 48), "data:image/png;base64,")}
			result := llm.ResultBlock(first.ToolCalls[0], "hello", false)
			result.Result.Content = append(result.Result.Content, llm.ImageBlock(picture))
			req.Messages = append(req.Messages, first.Message, llm.UserMessage(result))
			second, err := c.Complete(ctx, req)
			if err != nil || second.Text != "It says hello." || second.Usage.Prompt == 0 {
				t.Fatalf("second reply: %+v, %v", second, err)
			}
			if imgs := s.Received()[1].Images; len(imgs) != 1 || imgs[0].Source != "input_image" || imgs[0].Width != 64 || !strings.HasSuffix(imgs[0].Path, ".content[0]") {
				t.Errorf("the result's image as the server took it: %+v", imgs)
			}
			req.Messages = append(req.Messages, second.Message, llm.UserText("Was the task fully accomplished?"))
			v, _, err := c.Verify(ctx, req)
			if err != nil || !v.Success {
				t.Fatalf("verdict: %+v, %v", v, err)
			}
			if title, _, err := c.Title(ctx, "Read a.txt"); err != nil || title != "Read a file" {
				t.Fatalf("title %q, %v", title, err)
			}
			if s.Refusals() != 0 {
				for _, r := range s.Received() {
					t.Logf("%d %s", r.Status, r.Error)
				}
				t.Fatalf("%d of the client's requests refused", s.Refusals())
			}
			// The reasoning went back (encrypted) only from an OpenAI
			// provider.
			second2 := s.Received()[1]
			sent := strings.Contains(second2.Body, `"type":"reasoning"`)
			if sent != (typ == llm.TypeOpenAI) {
				t.Errorf("%s: reasoning sent back %v: %.400s", typ, sent, second2.Body)
			}
		})
	}
}

// TestTheProjectClientComputerUse: Hivecrew's client as an OpenAI provider
// of computer-use-preview: it offers the computer tool with the display
// and truncation "auto", reads a computer_call with a pending safety
// check, and answers it with the screenshot and the acknowledgement the
// user gave; without the acknowledgement the server refuses it.
func TestTheProjectClientComputerUse(t *testing.T) {
	s := New(t)
	s.Script("[[cua]]", Items(Reasoning("The OK button."), WithSafetyCheck(Computer(map[string]any{"type": "click", "button": "left", "x": 100, "y": 200}),
		"malicious_instructions", "The page asks you to ignore your instructions.")),
		Text("Clicked OK."), Verdict(true, "OK was clicked."))
	c, err := llm.New(llm.Config{Type: llm.TypeOpenAI, BaseURL: s.URL, Model: "computer-use-preview", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Native() != llm.NativeOpenAI {
		t.Fatalf("native %q", c.Native())
	}
	ctx := context.Background()
	screen := pngImage(t, 1280, 800)
	req := llm.Request{System: "You use a computer.", Computer: &llm.Display{Width: 1280, Height: 800, OS: "linux"},
		Messages: []llm.Message{llm.UserMessage(llm.Text("[[cua]] Press OK."), llm.ImageBlock(screen))}}
	first, err := c.CompleteStream(ctx, req, func(llm.Delta) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ToolCalls) != 1 {
		t.Fatalf("first reply %+v", first)
	}
	call := first.ToolCalls[0]
	if call.Native != llm.NativeOpenAI || call.Action == nil || call.Action.Kind != llm.ActClick || *call.Action.Point != (llm.Point{X: 100, Y: 200}) ||
		len(call.SafetyChecks) != 1 || call.SafetyChecks[0].Code != "malicious_instructions" {
		t.Fatalf("call %+v", call)
	}
	answer := func(acked []llm.SafetyCheck) llm.Request {
		r := req
		r.Messages = append(slices.Clone(req.Messages), first.Message, llm.UserMessage(llm.Block{Type: llm.BlockToolResult, Result: &llm.ToolResult{
			CallID: call.ID, Native: call.Native, Content: []llm.Block{llm.Text("Done."), llm.ImageBlock(screen)}, Acknowledged: acked}}))
		return r
	}
	// Unacknowledged: refused, as OpenAI refuses it.
	if _, err := c.Complete(ctx, answer(nil)); err == nil || s.Refusals() != 1 {
		t.Fatalf("an unacknowledged check went through: %v (%d refusals)", err, s.Refusals())
	}
	second, err := c.Complete(ctx, answer(call.SafetyChecks))
	if err != nil || second.Text != "Clicked OK." {
		t.Fatalf("second reply %+v, %v", second, err)
	}
	if acks := s.Acknowledgements(); len(acks) != 1 || acks[0].CallID != call.ID || len(acks[0].Checks) != 1 {
		t.Fatalf("acknowledgements %+v", acks)
	}
	got := s.Received()
	last := got[len(got)-1]
	if !strings.Contains(last.Body, `"truncation":"auto"`) || !strings.Contains(last.Body, `"display_width":1280`) || !strings.Contains(last.Body, `"environment":"linux"`) {
		t.Errorf("request %.600s", last.Body)
	}
	v, _, err := c.Verify(ctx, answer(call.SafetyChecks))
	if err != nil || !v.Success || v.Summary != "OK was clicked." {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	if s.Refusals() != 1 {
		t.Fatalf("%d refusals, want the one unacknowledged", s.Refusals())
	}
}

// pngImage is a w x h PNG for the model.
func pngImage(t *testing.T, w, h int) *llm.Image {
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
