package claudetest_test

import (
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/llm"
)

func TestAuthAndVersion(t *testing.T) {
	srv := newServer(t)
	for _, c := range []struct {
		name    string
		hdr     map[string]string
		status  int
		errType string
		msg     string
	}{
		{"no key", map[string]string{"x-api-key": ""}, 401, "authentication_error", "x-api-key header is required"},
		{"wrong key", map[string]string{"x-api-key": "sk-ant-other"}, 401, "authentication_error", "invalid x-api-key"},
		{"wrong bearer key", map[string]string{"x-api-key": "", "authorization": "Bearer sk-ant-other"}, 401, "authentication_error", "invalid x-api-key"},
		{"bearer key", map[string]string{"x-api-key": "", "authorization": "Bearer " + testKey}, 200, "", ""},
		{"no version", map[string]string{"anthropic-version": ""}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"old version", map[string]string{"anthropic-version": "2023-01-01"}, 400, "invalid_request_error", "anthropic-version"},
		{"valid", nil, 200, "", ""},
		{"SDK v2's version", map[string]string{"anthropic-version": "2026-10-21"}, 200, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, srv, "/v1/messages", req(), c.hdr)
			if a.status != c.status || a.errType != c.errType || !strings.Contains(a.errMsg, c.msg) {
				t.Fatalf("got %d %s %q, want %d %s %q", a.status, a.errType, a.errMsg, c.status, c.errType, c.msg)
			}
		})
	}
	if n := len(srv.Refusals()); n != 5 {
		t.Errorf("%d refusals counted, want 5", n)
	}
	if srv.Count() != 3 {
		t.Errorf("Count %d, want 3 accepted requests", srv.Count())
	}
}

// strictCase is a request that breaks (or keeps) one of the API's rules.
type strictCase struct {
	name    string
	body    map[string]any
	beta    string
	version string // anthropic-version, if not 2023-06-01
	status  int
	errType string
	msg     string // in the error's message
}

func refused(name, msg string, body map[string]any) strictCase {
	return strictCase{name: name, body: body, status: 400, errType: "invalid_request_error", msg: msg}
}

func passes(name string, body map[string]any) strictCase {
	return strictCase{name: name, body: body, status: 200}
}

func runStrict(t *testing.T, cases []strictCase) {
	srv := newServer(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(srv.Refusals())
			hdr := map[string]string{}
			if c.beta != "" {
				hdr["anthropic-beta"] = c.beta
			}
			if c.version != "" {
				hdr["anthropic-version"] = c.version
			}
			path := "/v1/messages"
			if c.beta != "" {
				path += "?beta=true"
			}
			a := post(t, srv, path, c.body, hdr)
			if a.status != c.status || a.errType != c.errType || !strings.Contains(a.errMsg, c.msg) {
				t.Fatalf("got %d %s %q, want %d %s containing %q", a.status, a.errType, a.errMsg, c.status, c.errType, c.msg)
			}
			want := before
			if c.status != 200 {
				want++
			}
			if n := len(srv.Refusals()); n != want {
				t.Errorf("%d refusals, want %d", n, want)
			}
		})
	}
}

func TestRequestFields(t *testing.T) {
	runStrict(t, []strictCase{
		passes("minimal", req()),
		passes("system string and sampling", req("system", "Be brief.", "temperature", 0.2, "stop_sequences", []any{"END"}, "metadata", map[string]any{"user_id": "u1"})),
		refused("no model", "model: Field required", req("model", nil)),
		refused("no max_tokens", "max_tokens: Field required", req("max_tokens", nil)),
		refused("max_tokens above the model's", "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens", req("max_tokens", 100000)),
		refused("max_tokens not an integer", "max_tokens: Input should be a valid integer", req("max_tokens", 10.5)),
		{name: "unknown model", body: req("model", "claude-sonnet-9"), status: 404, errType: "not_found_error", msg: "model: claude-sonnet-9"},
		refused("misspelled top-level field", "temprature: Extra inputs are not permitted", req("temprature", 0.5)),
		refused("misspelled block field", "messages.0.content.0.text.txt: Extra inputs are not permitted", req("messages", msgs(user(map[string]any{"type": "text", "txt": "hi"})))),
		refused("field this fake does not model", "output_config: claudetest does not model", req("output_config", map[string]any{"effort": "low"})),
		refused("temperature and top_p together", "`temperature` and `top_p` cannot both be specified", req("temperature", 0.5, "top_p", 0.9)),
		refused("temperature above 1", "temperature: Input should be less than or equal to 1", req("temperature", 1.5)),
		{name: "temperature under 2026-10-21", body: req("temperature", 1), version: "2026-10-21", status: 400, errType: "invalid_request_error", msg: "temperature: Extra inputs are not permitted"},
		{name: "top_k under 2026-10-21", body: req("top_k", 5), version: "2026-10-21", status: 400, errType: "invalid_request_error", msg: "top_k: Extra inputs are not permitted"},
		{name: "no sampling under 2026-10-21", body: req("system", "Be brief."), version: "2026-10-21", status: 200},
		refused("stream not a boolean", "stream: Input should be a valid boolean", req("stream", "yes")),
	})
}

func TestMessagesRules(t *testing.T) {
	runStrict(t, []strictCase{
		passes("alternating turns", req("messages", msgs(user("Hi."), assistant("Hello."), user(text("How are you?"))))),
		passes("empty final assistant message", req("messages", msgs(user("Hi."), assistant()))),
		refused("no messages", "messages: at least one message is required", req("messages", []any{})),
		refused("messages missing", "messages: Field required", req("messages", nil)),
		refused("first from the assistant", `messages: first message must use the "user" role`, req("messages", msgs(assistant("Hi."), user("Hello.")))),
		refused("system role", "messages.0.role: Input should be 'user' or 'assistant'", req("messages", msgs(msg("system", "Be nice."), user("Hi.")))),
		refused("content a number", "messages.0.content: Input should be a valid list", req("messages", msgs(map[string]any{"role": "user", "content": 7}))),
		refused("content missing", "messages.0.content: Field required", req("messages", msgs(map[string]any{"role": "user"}))),
		refused("empty content", "messages.0: all messages must have non-empty content", req("messages", msgs(user("")))),
		refused("empty text block", "messages: text content blocks must be non-empty", req("messages", msgs(user(text(""))))),
		refused("blank text block", "messages: text content blocks must contain non-whitespace text", req("messages", msgs(user(text(" \n"))))),
		refused("unknown block type", "messages.0.content.0: Input tag 'video' found using 'type'", req("messages", msgs(user(map[string]any{"type": "video"})))),
		refused("tool_use in a user message", "`tool_use` blocks are not allowed in `user` messages", req("tools", []any{waitTool}, "messages", msgs(user(toolUse("toolu_1", "wait", map[string]any{}))))),
	})
}

func TestToolLoopRules(t *testing.T) {
	call := func(id string) map[string]any { return toolUse(id, "wait", map[string]any{"seconds": 1}) }
	loop := func(m ...any) map[string]any { return req("tools", []any{waitTool}, "messages", msgs(m...)) }
	runStrict(t, []strictCase{
		passes("answered call", loop(user("Wait."), assistant(text("Waiting."), call("toolu_01")), user(toolResult("toolu_01", "waited")))),
		passes("parallel calls, results then text", loop(user("Wait twice."), assistant(call("toolu_01"), call("toolu_02")),
			user(toolResult("toolu_02", "waited"), toolResult("toolu_01", []any{text("waited")}), text("Go on.")))),
		refused("call without result", "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01",
			loop(user("Wait."), assistant(call("toolu_01")), user("Go on."))),
		refused("result not first", "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message",
			loop(user("Wait."), assistant(call("toolu_01")), user(text("Here:"), toolResult("toolu_01", "waited")))),
		refused("one of two calls unanswered", "without `tool_result` blocks immediately after: toolu_02",
			loop(user("Wait."), assistant(call("toolu_01"), call("toolu_02")), user(toolResult("toolu_01", "waited")))),
		refused("result for an unknown id", "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_09",
			loop(user("Wait."), assistant(call("toolu_01")), user(toolResult("toolu_01", "ok"), toolResult("toolu_09", "ok")))),
		refused("result for an older call", "messages.4.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01",
			loop(user("Wait."), assistant(call("toolu_01")), user(toolResult("toolu_01", "ok")), assistant(call("toolu_02")),
				user(toolResult("toolu_02", "ok"), toolResult("toolu_01", "again")))),
		refused("duplicate ids", "`tool_use` ids must be unique",
			loop(user("Wait."), assistant(call("toolu_01")), user(toolResult("toolu_01", "ok")), assistant(call("toolu_01")), user(toolResult("toolu_01", "ok")))),
		refused("id with a dot", "tool_use.id: String should match pattern", loop(user("Wait."), assistant(call("toolu.1")), user(toolResult("toolu.1", "ok")))),
		refused("input not an object", "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
			loop(user("Wait."), assistant(toolUse("toolu_01", "wait", "1s")), user(toolResult("toolu_01", "ok")))),
		refused("tool blocks without tools", "Requests which include `tool_use` or `tool_result` blocks must define tools.",
			req("messages", msgs(user("Wait."), assistant(call("toolu_01")), user(toolResult("toolu_01", "ok"))))),
	})
}

func TestToolDefinitions(t *testing.T) {
	custom := func(name string, schema any) map[string]any {
		return map[string]any{"name": name, "input_schema": schema}
	}
	object := map[string]any{"type": "object"}
	runStrict(t, []strictCase{
		passes("custom tools", req("tools", []any{waitTool, reportTool, map[string]any{"type": "custom", "name": "a-b_9", "input_schema": object}})),
		refused("bad name", "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", req("tools", []any{custom("open file", object)})),
		refused("name too long", "String should match pattern", req("tools", []any{custom(strings.Repeat("x", 65), object)})),
		refused("duplicate names", "tools: Tool names must be unique.", req("tools", []any{waitTool, waitTool})),
		refused("no input_schema", "tools.0.custom.input_schema: Field required", req("tools", []any{map[string]any{"name": "wait"}})),
		refused("schema not an object", "tools.0.custom.input_schema.type: Input should be 'object'", req("tools", []any{custom("wait", map[string]any{"type": "string"})})),
		refused("invalid schema", "tools.0.custom.input_schema: JSON schema is invalid", req("tools", []any{custom("wait", map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"type": 7}}})})),
		refused("misspelled tool field", "tools.0.custom.descripton: Extra inputs are not permitted", req("tools", []any{map[string]any{"name": "wait", "descripton": "x", "input_schema": object}})),
		refused("unknown tool type", "tools.0: Input tag 'function' found using 'type'", req("tools", []any{map[string]any{"type": "function", "name": "wait"}})),
		refused("tool_choice of a missing tool", "tool_choice.name: Tool 'report' not found in provided tools", req("tools", []any{waitTool}, "tool_choice", map[string]any{"type": "tool", "name": "report"})),
		passes("tool_choice of a tool", req("tools", []any{waitTool, reportTool}, "tool_choice", map[string]any{"type": "tool", "name": "report"})),
	})
}

func TestComputerTool(t *testing.T) {
	c2501, c2511 := computerTool("computer_20250124", 1280, 800), computerTool("computer_20251124", 1280, 800)
	zoomed := computerTool("computer_20251124", 1280, 800)
	zoomed["enable_zoom"] = true
	oldZoom := computerTool("computer_20250124", 1280, 800)
	oldZoom["enable_zoom"] = true
	opus := func(kv ...any) map[string]any { return req(append([]any{"model", "claude-opus-4-5"}, kv...)...) }
	runStrict(t, []strictCase{
		{name: "20250124 with its beta", body: req("tools", []any{c2501}), beta: "computer-use-2025-01-24", status: 200},
		refused("20250124 without its beta", "tools.0: Input tag 'computer_20250124' found using 'type' does not match", req("tools", []any{c2501})),
		{name: "20250124 with the other beta", body: req("tools", []any{c2501}), beta: "computer-use-2025-11-24", status: 400, errType: "invalid_request_error", msg: "computer-use-2025-01-24"},
		{name: "enable_zoom on 20250124", body: req("tools", []any{oldZoom}), beta: "computer-use-2025-01-24", status: 400, errType: "invalid_request_error", msg: "tools.0.computer_20250124.enable_zoom: Extra inputs are not permitted"},
		{name: "20251124 on opus", body: opus("tools", []any{zoomed}), beta: "computer-use-2025-11-24", status: 200},
		{name: "20251124 on sonnet", body: req("tools", []any{c2511}), beta: "computer-use-2025-11-24", status: 400, errType: "invalid_request_error", msg: "does not support the computer_20251124 tool"},
		{name: "name not computer", body: req("tools", []any{map[string]any{"type": "computer_20250124", "name": "screen", "display_width_px": 10, "display_height_px": 10}}),
			beta: "computer-use-2025-01-24", status: 400, errType: "invalid_request_error", msg: "tools.0.computer_20250124.name: Input should be 'computer'"},
		{name: "no display height", body: req("tools", []any{map[string]any{"type": "computer_20250124", "name": "computer", "display_width_px": 10}}),
			beta: "computer-use-2025-01-24", status: 400, errType: "invalid_request_error", msg: "tools.0.computer_20250124.display_height_px: Field required"},
	})
}

func TestThinkingRules(t *testing.T) {
	thinking := func(budget int) map[string]any { return map[string]any{"type": "enabled", "budget_tokens": budget} }
	runStrict(t, []strictCase{
		passes("enabled", req("max_tokens", 4096, "thinking", thinking(2048))),
		passes("disabled", req("thinking", map[string]any{"type": "disabled"})),
		refused("budget below 1024", "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024", req("max_tokens", 4096, "thinking", thinking(1000))),
		refused("budget not below max_tokens", "`max_tokens` must be greater than `thinking.budget_tokens`", req("max_tokens", 2048, "thinking", thinking(2048))),
		{name: "budget above max_tokens with interleaved thinking", body: req("max_tokens", 2048, "thinking", thinking(4096)), beta: "interleaved-thinking-2025-05-14", status: 200},
		refused("forced tool", "Thinking may not be enabled when tool_choice forces tool use.",
			req("max_tokens", 4096, "thinking", thinking(2048), "tools", []any{reportTool}, "tool_choice", map[string]any{"type": "any"})),
		refused("forced named tool", "Thinking may not be enabled when tool_choice forces tool use.",
			req("max_tokens", 4096, "thinking", thinking(2048), "tools", []any{reportTool}, "tool_choice", map[string]any{"type": "tool", "name": "report"})),
		passes("auto tool_choice", req("max_tokens", 4096, "thinking", thinking(2048), "tools", []any{reportTool}, "tool_choice", map[string]any{"type": "auto"})),
		refused("temperature", "`temperature` may only be set to 1 when thinking is enabled", req("max_tokens", 4096, "thinking", thinking(2048), "temperature", 0.5)),
		refused("top_k", "`top_k` is not supported when thinking is enabled", req("max_tokens", 4096, "thinking", thinking(2048), "top_k", 5)),
		refused("unknown type", "thinking: Input tag 'on' found using 'type'", req("thinking", map[string]any{"type": "on"})),
		refused("forged signature", "messages.1.content.0: Invalid `signature` in `thinking` block",
			req("max_tokens", 4096, "thinking", thinking(2048), "messages", msgs(user("Hi."), assistant(map[string]any{"type": "thinking", "thinking": "Hmm.", "signature": "EqForged"}, text("Hello.")), user("Again.")))),
		refused("forged redacted data", "messages.1.content.0: Invalid `data` in `redacted_thinking` block",
			req("max_tokens", 4096, "thinking", thinking(2048), "messages", msgs(user("Hi."), assistant(map[string]any{"type": "redacted_thinking", "data": "bm9wZQ=="}, text("Hello.")), user("Again.")))),
	})
}

func TestCacheControlLimit(t *testing.T) {
	four := req("system", []any{cached(text("Rules."))}, "tools", []any{cached(waitTool)},
		"messages", msgs(user(cached(text("One."))), assistant(text("Two.")), user(cached(text("Three."), "1h"))))
	five := req("system", []any{cached(text("Rules."))}, "tools", []any{cached(waitTool)},
		"messages", msgs(user(cached(text("One."))), assistant(cached(text("Two."))), user(text("Three."), cached(text("Four.")))))
	runStrict(t, []strictCase{
		passes("four breakpoints", four),
		refused("five breakpoints", "A maximum of 4 blocks with cache_control may be provided. Found 5.", five),
		refused("unknown type", "messages.0.content.0.text.cache_control.type: Input should be 'ephemeral'",
			req("messages", msgs(user(map[string]any{"type": "text", "text": "Hi.", "cache_control": map[string]any{"type": "persistent"}})))),
		refused("unknown ttl", "cache_control.ttl: Input should be '5m' or '1h'", req("messages", msgs(user(cached(text("Hi."), "1d"))))),
	})
}

func TestImageRules(t *testing.T) {
	png := encoded(t, "png", 64, 48)
	jpg := encoded(t, "jpeg", 64, 48)
	wide := encoded(t, "png", 8001, 1)
	var many, manyOK []any
	big := encoded(t, "png", 2001, 2)
	for range 21 {
		many = append(many, imageBlock("image/png", big))
	}
	manyOK = append(manyOK, many[:20]...)
	withImages := func(blocks ...any) map[string]any {
		return req("messages", msgs(user(append(blocks, text("What is this?"))...)))
	}
	runStrict(t, []strictCase{
		passes("png and jpeg", withImages(imageBlock("image/png", png), imageBlock("image/jpeg", jpg))),
		passes("20 images over 2000 px", withImages(manyOK...)),
		refused("21 images over 2000 px", "At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels", withImages(many...)),
		refused("media type not taken", "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", withImages(imageBlock("image/bmp", png))),
		refused("media type not the data's", "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg", withImages(imageBlock("image/jpeg", png))),
		refused("not an image", "Could not process image", withImages(imageBlock("image/png", "aGVsbG8gd29ybGQ="))),
		refused("truncated image", "Could not process image", withImages(imageBlock("image/png", png[:len(png)/2/4*4]))),
		refused("not base64", "image.source.base64.data", withImages(imageBlock("image/png", "***"))),
		refused("wider than 8000 px", "At least one of the image dimensions exceed max allowed size: 8000 pixels", withImages(imageBlock("image/png", wide))),
		refused("over 5 MB", "messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes", withImages(imageBlock("image/png", strings.Repeat("A", 5<<20+4)))),
		refused("url source", "claudetest does not model", withImages(map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.png"}})),
	})
}

func TestPromptTooLong(t *testing.T) {
	srv := newServer(t)
	srv.ContextTokens = 1000
	// 4005 bytes are 1002 tokens; 4000 are 1000, at the limit.
	a := post(t, srv, "/v1/messages", req("messages", msgs(user(strings.Repeat("word ", 801)))), nil)
	if a.status != 400 || a.errType != "invalid_request_error" || a.errMsg != "prompt is too long: 1002 tokens > 1000 maximum" {
		t.Fatalf("got %d %s %q", a.status, a.errType, a.errMsg)
	}
	if ok := post(t, srv, "/v1/messages", req("messages", msgs(user(strings.Repeat("word ", 800)))), nil); ok.status != 200 {
		t.Fatalf("a prompt at the limit: %d %s", ok.status, ok.errMsg)
	}
}

func TestTitleRequests(t *testing.T) {
	srv := newServer(t)
	srv.Title("Rename the quarterly report")
	a := post(t, srv, "/v1/messages", req("max_tokens", llm.TitleMaxTokens, "system", llm.TitlePrompt, "messages", msgs(user("Please rename report.pdf."))), nil)
	m := a.message(t)
	if len(m.Content) != 1 || m.Content[0].Text != "Rename the quarterly report" || m.StopReason != "end_turn" {
		t.Fatalf("title answer %s", a.body)
	}
	if n := len(srv.Titles()); n != 1 {
		t.Fatalf("%d title requests recorded", n)
	}
	if a.header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
}
