package responsestest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// answer is a turn about to be served for a request.
type answer struct {
	id       string
	created  int64
	req      *request
	turn     Turn
	output   []map[string]any
	usage    Usage
	problems []string
}

// serve waits as the turn says, then answers: an HTTP error, a JSON
// response, or its events.
func (a *answer) serve(w http.ResponseWriter, r *http.Request) {
	if d := a.turn.Delay; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if a.turn.Hold != nil {
		select {
		case <-a.turn.Hold:
		case <-r.Context().Done():
			return
		}
	}
	switch t := a.turn; {
	case t.Status != 0:
		var retry time.Duration
		if t.Status == http.StatusTooManyRequests {
			retry = max(t.RetryAfter, time.Second)
		}
		writeError(w, statusError(t.Status), retry)
	case a.req.Stream:
		a.stream(w)
	case t.fail != nil && t.fail.event:
		writeError(w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: t.fail.message, Code: orNull(t.fail.code)}, 0)
	default:
		b, _ := json.Marshal(a.final())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if t.broken {
			w.Write(b[:len(b)/2])
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler) // the connection is cut
		}
		w.Write(b)
	}
}

// response is the response object with this status, output and usage.
func (a *answer) response(status string, output []map[string]any, usage any) map[string]any {
	format := map[string]any{"type": a.req.Format.Type}
	if f := a.req.Format; f.Type == "json_schema" {
		format = map[string]any{"type": f.Type, "name": f.Name, "schema": f.Schema, "strict": f.Strict != nil && *f.Strict, "description": orNull(f.Description)}
	}
	var tools any = []any{}
	if len(a.req.toolsRaw) > 0 {
		tools = a.req.toolsRaw
	}
	var toolChoice any = "auto"
	if len(a.req.ToolChoice) > 0 && string(a.req.ToolChoice) != "null" {
		toolChoice = a.req.ToolChoice
	}
	var maxOut any
	if a.req.MaxOutputTokens > 0 {
		maxOut = a.req.MaxOutputTokens
	}
	if output == nil {
		output = []map[string]any{}
	}
	return map[string]any{
		"id": a.id, "object": "response", "created_at": a.created, "status": status,
		"background": false, "error": nil, "incomplete_details": nil,
		"instructions": orNull(a.req.Instructions), "max_output_tokens": maxOut, "max_tool_calls": nil,
		"model": a.req.Model, "output": output, "parallel_tool_calls": a.req.ParallelToolCalls,
		"previous_response_id": orNull(a.req.PreviousResponseID),
		"reasoning":            map[string]any{"effort": orNull(a.req.Reasoning.Effort), "summary": orNull(a.req.Reasoning.Summary)},
		"service_tier":         "default", "store": a.req.Store, "temperature": 1.0,
		"text": map[string]any{"format": format}, "tool_choice": toolChoice, "tools": tools,
		"top_p": 1.0, "truncation": a.req.Truncation, "usage": usage, "user": nil, "metadata": map[string]any{},
	}
}

// final is the whole response as it ends.
func (a *answer) final() map[string]any {
	u := a.usage
	usage := map[string]any{
		"input_tokens": u.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": u.CachedTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens": u.TotalTokens,
	}
	switch t := a.turn; {
	case t.fail != nil:
		r := a.response("failed", nil, usage)
		r["error"] = map[string]any{"code": t.fail.code, "message": t.fail.message}
		return r
	case t.incomplete != "":
		r := a.response("incomplete", a.output, usage)
		r["incomplete_details"] = map[string]any{"reason": t.incomplete}
		return r
	}
	r := a.response("completed", a.output, usage)
	r["completed_at"] = time.Now().Unix()
	return r
}

// events writes server-sent events, numbered.
type events struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	seq int
}

func (e *events) send(typ string, fields map[string]any) {
	fields["type"], fields["sequence_number"] = typ, e.seq
	e.seq++
	b, _ := json.Marshal(fields)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", typ, b)
	e.rc.Flush()
}

// stream answers with events as OpenAI streams a response: created and
// in progress, each output item (added, its parts and deltas, done), then
// completed, incomplete or failed; or an error event.
func (a *answer) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &events{w: w, rc: http.NewResponseController(w)}
	e.send("response.created", map[string]any{"response": a.response("in_progress", nil, nil)})
	e.send("response.in_progress", map[string]any{"response": a.response("in_progress", nil, nil)})
	if f := a.turn.fail; f != nil && f.event {
		e.send("error", map[string]any{"code": f.code, "message": f.message, "param": nil})
		return
	}
	for i, m := range a.output {
		if !a.streamItem(e, i, m) {
			panic(http.ErrAbortHandler) // the connection is cut
		}
	}
	final := a.final()
	e.send("response."+final["status"].(string), map[string]any{"response": final})
}

// streamItem streams output item i; false means the turn is broken and
// the stream must be cut here.
func (a *answer) streamItem(e *events, i int, m map[string]any) bool {
	id := m["id"]
	added := map[string]any{}
	for k, v := range m {
		added[k] = v
	}
	at := func(fields map[string]any) map[string]any {
		fields["item_id"], fields["output_index"] = id, i
		return fields
	}
	switch m["type"] {
	case "message":
		added["status"], added["content"] = "in_progress", []any{}
		e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		for ci, p := range m["content"].([]any) {
			part := p.(map[string]any)
			field, prefix := "text", "response.output_text"
			empty := map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}
			if part["type"] == "refusal" {
				field, prefix, empty = "refusal", "response.refusal", map[string]any{"type": "refusal", "refusal": ""}
			}
			e.send("response.content_part.added", at(map[string]any{"content_index": ci, "part": empty}))
			text := part[field].(string)
			for _, word := range strings.SplitAfter(text, " ") {
				if word == "" {
					continue
				}
				delta := at(map[string]any{"content_index": ci, "delta": word})
				if field == "text" {
					delta["logprobs"] = []any{}
				}
				e.send(prefix+".delta", delta)
				if a.turn.broken {
					return false
				}
			}
			done := at(map[string]any{"content_index": ci, field: text})
			if field == "text" {
				done["logprobs"] = []any{}
			}
			e.send(prefix+".done", done)
			e.send("response.content_part.done", at(map[string]any{"content_index": ci, "part": part}))
		}
	case "reasoning":
		added["summary"] = []any{}
		delete(added, "encrypted_content")
		e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		for si, p := range m["summary"].([]any) {
			text := p.(map[string]any)["text"].(string)
			e.send("response.reasoning_summary_part.added", at(map[string]any{"summary_index": si, "part": map[string]any{"type": "summary_text", "text": ""}}))
			for _, word := range strings.SplitAfter(text, " ") {
				if word != "" {
					e.send("response.reasoning_summary_text.delta", at(map[string]any{"summary_index": si, "delta": word}))
				}
			}
			e.send("response.reasoning_summary_text.done", at(map[string]any{"summary_index": si, "text": text}))
			e.send("response.reasoning_summary_part.done", at(map[string]any{"summary_index": si, "part": map[string]any{"type": "summary_text", "text": text}}))
		}
	case "function_call":
		added["status"], added["arguments"] = "in_progress", ""
		e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		args := m["arguments"].(string)
		for _, piece := range pieces(args, 3) {
			e.send("response.function_call_arguments.delta", at(map[string]any{"delta": piece}))
		}
		e.send("response.function_call_arguments.done", at(map[string]any{"arguments": args}))
	default:
		added["status"] = "in_progress"
		e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
	}
	e.send("response.output_item.done", map[string]any{"output_index": i, "item": m})
	return true
}

// pieces cuts s into at most n pieces at rune boundaries, as a model
// streams a call's arguments token by token.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut := (len(s) + n - len(out) - 1) / max(n-len(out), 1)
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out, s = append(out, s[:cut]), s[cut:]
	}
	return out
}

// impossible says what in turn the model could not have answered to req:
// calls of tools it does not offer, more calls than it allows, an answer
// that does not fit its strict json_schema.
func impossible(turn Turn, req *request) []string {
	var out []string
	calls := 0
	for _, it := range turn.items {
		switch it.kind {
		case "function_call":
			calls++
			if !offers(req, "function", it.name) {
				out = append(out, fmt.Sprintf("a call of function %q, which the request does not offer", it.name))
			}
		case "computer_call":
			calls++
			if !offers(req, "computer_use_preview", "") {
				out = append(out, "a computer call, but the request offers no computer_use_preview tool")
			}
		case "message":
			if f := req.Format; f.Type == "json_schema" && f.Strict != nil && *f.Strict {
				if err := fits(it.text, f.Schema); err != nil {
					out = append(out, fmt.Sprintf("the text %q, which does not fit the json_schema %q: %v", it.text, f.Name, err))
				}
			}
		}
	}
	var choice string
	json.Unmarshal(req.ToolChoice, &choice)
	switch {
	case calls > 1 && !req.ParallelToolCalls:
		out = append(out, fmt.Sprintf("%d calls in one turn, but parallel_tool_calls is false", calls))
	case calls > 0 && choice == "none":
		out = append(out, "a call, but tool_choice is \"none\"")
	case calls == 0 && choice == "required" && turn.Status == 0 && turn.fail == nil:
		out = append(out, "no call, but tool_choice is \"required\"")
	}
	return out
}

func offers(req *request, typ, name string) bool {
	for _, t := range req.Tools {
		if t.Type == typ && t.Name == name {
			return true
		}
	}
	return false
}

// fits checks a JSON text against a JSON schema.
func fits(text string, schema map[string]any) error {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	b, _ := json.Marshal(schema)
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	rs, err := sch.Resolve(nil)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return rs.Validate(v)
}
