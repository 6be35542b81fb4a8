// Package claudetest is the Anthropic end of the end-to-end tests: an HTTP
// server in the test that speaks Anthropic's Messages API as Anthropic
// documents it (POST /v1/messages, the beta endpoint too with or without
// ?beta=true, answered as JSON or as a stream of server-sent events; GET
// /v1/models and /v1/models/{id}), plays scripts of answers and records
// every request it was sent. It is the only fake an
// end-to-end test may put in front of a Claude client, so it refuses what
// the real API refuses: with the status, the error type and a message like
// Anthropic's, counted in Refusals, so a test can assert that its client
// sent nothing the real API would have rejected. New ties it to a test;
// Start runs it in a program (the benchmark), with its own errorf for the
// scripts' mistakes.
//
// Scripts read like llmtest's. Script(marker, turns...) answers the requests
// whose body contains marker (or whose name Server.Match returns), one turn
// a request. A turn is one answer made of blocks: Text, Thinking (the server
// signs it), RedactedThinking, ToolUse, Computer (a tool_use of the computer
// tool) and Verdict (the call of whatever tool tool_choice forces, with
// input {success, summary}); Reply joins several into one answer (parallel
// tool calls, thinking before a call) and sets Refusal or MaxTokens as its
// stop reason, which is otherwise tool_use when it calls a tool and
// end_turn when not. A turn can instead fail: Status (an HTTP error, with
// Turn.RetryAfter for a retry-after header), StreamError (an error event
// inside a started stream), Broken (the connection cut mid-answer). Hold,
// Delay and Repeat work as in llmtest. A request no script matches gets a
// default: the forced tool's call with {"success":true,"summary":"Done."}
// when tool_choice forces one, a text answer otherwise. Title requests
// (llm.TitlePrompt in the system prompt) get Title's answer.
//
//	llm := claudetest.New(t)
//	llm.Script("[[save]]",
//		claudetest.Reply(claudetest.Thinking("Ctrl+S saves."), claudetest.Computer("key", map[string]any{"text": "ctrl+s"})),
//		claudetest.Text("Saved."))
//	client := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(llm.URL),
//		option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
//	... run the task with a description containing [[save]] ...
//	shots := llm.Received("[[save]]")[1].Images // sizes of the screenshots sent
//	if r := llm.Refusals(); len(r) > 0 { t.Fatalf("the API would refuse: %+v", r) }
//
// What it refuses, and why each: every rule below is one the real API
// enforces and one a client of ours can break; a fake that let it through
// would let the bug through to the users.
//   - Headers: a missing or wrong API key (401 authentication_error; in
//     x-api-key, or as Authorization's bearer token as SDK v2 sends it), an
//     anthropic-version other than 2023-06-01 and 2026-10-21 (which SDK v2
//     sends; under it temperature, top_p and top_k are unknown fields).
//   - Fields: a field the API does not have, at any depth we parse ("X:
//     Extra inputs are not permitted"), a value of the wrong type, a
//     missing required one ("Field required"). Documented fields this fake
//     does not model are refused with a message saying so: a test must not
//     pass on a behaviour nobody simulated.
//   - model and max_tokens required, max_tokens at most MaxOutputTokens; an
//     unknown model is 404 not_found_error.
//   - messages: non-empty, the first from the user, roles user or
//     assistant, content a non-empty string or list of blocks, no empty or
//     blank text block.
//   - Tool use: every tool_use of an assistant message answered by a
//     tool_result with its id in the next message, those tool_results
//     first in it; a tool_result for an id the previous message did not
//     use; duplicate tool_use ids; tool blocks without tools.
//   - Tools: names ^[a-zA-Z0-9_-]{1,64}$ and unique; a custom tool's
//     input_schema an object schema that is valid JSON Schema; the computer
//     tool (computer_20250124 or computer_20251124, enable_zoom only on
//     the latter) only with its beta in anthropic-beta, computer_20251124
//     only on ZoomModels; tool_choice naming a tool that is not there.
//   - Extended thinking: budget_tokens >= 1024 and < max_tokens (unless
//     interleaved thinking is on), no forced tool_choice, temperature 1,
//     no top_k, top_p at least 0.95; in a tool loop the turn's first assistant message must
//     start with a thinking or redacted_thinking block; every thinking
//     block sent back must carry the signature this server issued for
//     exactly its text (an HMAC of the server's), every redacted_thinking
//     block data this server issued; no thinking in a final assistant
//     message when thinking is off; no assistant message ending in one.
//   - cache_control on more than 4 blocks of tools, system and messages.
//   - Images: base64 only, media type jpeg, png, gif or webp and the data
//     decoding as that type, at most 5 MB of base64 (the limit the API
//     measures), at most 8000 px a side (2000 px when a request carries
//     more than 20 images), at most 100 images.
//   - "prompt is too long: N tokens > M maximum" above ContextTokens.
//
// Scripts are held to what the real model can answer: a tool the request
// did not declare, a computer action its tool version lacks, thinking when
// thinking is off or in a continued turn without interleaved thinking,
// parallel calls when disable_parallel_tool_use is set, anything but the
// forced tool when tool_choice forces one, fail the test.
//
// Usage is reported in every answer, computed from a simulated prompt
// cache that follows Anthropic's documented semantics: the prompt is tools,
// then system, then messages, a list of blocks; cache_control marks
// breakpoints; after each answered request the server remembers, per API
// key and model, the prefix up to each breakpoint that reaches the model's
// minimum cacheable length (CacheMinTokens); a request reads the longest
// remembered prefix ending at a block boundary at most 20 blocks before one
// of its breakpoints (cache_read_input_tokens), writes the tokens from
// there to its last breakpoint (cache_creation_input_tokens, split by TTL),
// and input_tokens is the rest. Simplified: tokens are estimated (text
// bytes/4, a tool's JSON bytes/4, an image width*height/750, rounded up);
// a block's identity is its canonical JSON without cache_control, so key
// order does not matter as it might for the real tokenizer; entries never
// expire (tests are shorter than the 5-minute TTL); changing tool_choice
// or thinking does not invalidate the message cache; thinking blocks of
// earlier turns count as input; consecutive messages of one role are
// checked as sent, not merged first; output is not cut at max_tokens or at
// stop sequences.
package claudetest
