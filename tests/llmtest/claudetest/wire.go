package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// The JSON of a reply, in the API's field order.
type (
	messageJSON struct {
		ID           string    `json:"id"`
		Type         string    `json:"type"`
		Role         string    `json:"role"`
		Model        string    `json:"model"`
		Content      []any     `json:"content"`
		StopReason   *string   `json:"stop_reason"`
		StopSequence *string   `json:"stop_sequence"`
		Usage        usageJSON `json:"usage"`
	}
	usageJSON struct {
		InputTokens              int               `json:"input_tokens"`
		CacheCreationInputTokens int               `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int               `json:"cache_read_input_tokens"`
		CacheCreation            cacheCreationJSON `json:"cache_creation"`
		OutputTokens             int               `json:"output_tokens"`
		ServiceTier              string            `json:"service_tier"`
	}
	cacheCreationJSON struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	}
	// deltaUsageJSON is message_delta's usage: cumulative counts.
	deltaUsageJSON struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
	textJSON struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingJSON struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	redactedJSON struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	toolUseJSON struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
)

// json is the block as a reply carries it whole.
func (b outBlock) json() any {
	switch b.typ {
	case "thinking":
		return thinkingJSON{b.typ, b.text, b.signature}
	case "redacted_thinking":
		return redactedJSON{b.typ, b.data}
	case "tool_use":
		return toolUseJSON{b.typ, b.id, b.name, b.input}
	}
	return textJSON{b.typ, b.text}
}

// start is the block as content_block_start carries it: empty but for a
// redacted_thinking's data and a tool_use's id and name.
func (b outBlock) start() any {
	switch b.typ {
	case "thinking":
		return thinkingJSON{b.typ, "", ""}
	case "redacted_thinking":
		return redactedJSON{b.typ, b.data}
	case "tool_use":
		return toolUseJSON{b.typ, b.id, b.name, json.RawMessage("{}")}
	}
	return textJSON{b.typ, ""}
}

// deltas are the block's content_block_delta payloads.
func (b outBlock) deltas() []any {
	var out []any
	switch b.typ {
	case "text":
		for _, p := range words(b.text) {
			out = append(out, map[string]string{"type": "text_delta", "text": p})
		}
	case "thinking":
		for _, p := range words(b.text) {
			out = append(out, map[string]string{"type": "thinking_delta", "thinking": p})
		}
		out = append(out, map[string]string{"type": "signature_delta", "signature": b.signature})
	case "tool_use":
		out = append(out, map[string]string{"type": "input_json_delta", "partial_json": ""})
		for _, p := range pieces(string(b.input), 3) {
			out = append(out, map[string]string{"type": "input_json_delta", "partial_json": p})
		}
	}
	return out
}

// words splits text into deltas of a few words.
func words(text string) []string {
	var out []string
	var cur strings.Builder
	for i, w := range strings.SplitAfter(text, " ") {
		cur.WriteString(w)
		if i%3 == 2 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 || len(out) == 0 {
		out = append(out, cur.String())
	}
	return out
}

// pieces splits s into n pieces at rune boundaries.
func pieces(s string, n int) []string {
	var out []string
	for n > 1 && len(s) > 0 {
		cut := len(s) / n
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s, n = s[cut:], n-1
	}
	return append(out, s)
}

func (a *answer) message(content []any, stop *string, u usageJSON) messageJSON {
	return messageJSON{ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: content,
		StopReason: stop, Usage: u}
}

func (a *answer) usageJSON(output int) usageJSON {
	u := a.usage
	return usageJSON{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: output, ServiceTier: "standard",
		CacheCreation: cacheCreationJSON{u.Ephemeral5mInputTokens, u.Ephemeral1hInputTokens}}
}

// reply answers a request that is not streamed.
func (s *Server) reply(w http.ResponseWriter, a *answer, t Turn) {
	if t.StreamError != "" {
		writeTurnError(w, Turn{Status: statusOf(t.StreamError), ErrorType: t.StreamError, Message: t.Message})
		return
	}
	content := make([]any, len(a.blocks))
	for i, b := range a.blocks {
		content[i] = b.json()
	}
	body, _ := json.Marshal(a.message(content, &a.stop, a.usageJSON(a.usage.OutputTokens)))
	w.Header().Set("Content-Type", "application/json")
	if t.Broken {
		w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Write(body)
}

// event is one server-sent event.
type event struct {
	name string
	data any
}

// events are the stream of a reply: message_start, each block's start,
// deltas and stop, pings among them, message_delta and message_stop.
func (a *answer) events() []event {
	evs := []event{{"message_start", map[string]any{"type": "message_start", "message": a.message([]any{}, nil, a.usageJSON(1))}}}
	ping := event{"ping", map[string]string{"type": "ping"}}
	if len(a.blocks) == 0 {
		evs = append(evs, ping)
	}
	for i, b := range a.blocks {
		evs = append(evs, event{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b.start()}})
		if i == 0 {
			evs = append(evs, ping)
		}
		for _, d := range b.deltas() {
			evs = append(evs, event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}})
		}
		evs = append(evs, event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
		if i < len(a.blocks)-1 {
			evs = append(evs, ping)
		}
	}
	u := a.usage
	return append(evs,
		event{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil},
			"usage": deltaUsageJSON{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}}},
		event{"message_stop", map[string]string{"type": "message_stop"}})
}

// stream answers a streamed request with server-sent events, each with
// its event: and data: lines.
func (s *Server) stream(w http.ResponseWriter, a *answer, t Turn) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(e event) {
		b, _ := json.Marshal(e.data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, b)
		rc.Flush()
	}
	evs := a.events()
	switch {
	case t.Broken:
		for _, e := range evs[:len(evs)/2] {
			send(e)
		}
		panic(http.ErrAbortHandler)
	case t.StreamError != "":
		msg := t.Message
		if msg == "" {
			msg = defaultMessage(t.StreamError)
		}
		for _, e := range evs[:len(evs)-2] {
			send(e)
		}
		send(event{"error", errorBody(t.StreamError, msg)})
		return
	}
	for _, e := range evs {
		send(e)
	}
}
