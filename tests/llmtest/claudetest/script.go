package claudetest

import (
	"net/http"
	"strings"
	"time"
)

// Turn is one answer of a script: a reply made of blocks, or an error.
type Turn struct {
	// Blocks are the reply's content blocks, in order.
	Blocks []Block
	// Stop is the stop reason; "" derives it: tool_use when the reply
	// calls a tool, end_turn otherwise.
	Stop string

	// Status, when set, answers with this HTTP status and an error body
	// of type ErrorType (and Message, if set) instead of a reply.
	Status    int
	ErrorType string
	Message   string
	// RetryAfter, when set, is the retry-after header of an error answer
	// (seconds).
	RetryAfter string
	// StreamError, when set, is the type of an error event sent inside a
	// started stream after the reply's blocks (Message its message); a
	// request that is not streamed gets it as an HTTP error.
	StreamError string
	// Broken cuts the connection halfway through the answer.
	Broken bool

	// Hold, when set, delays the answer until it is closed (or the client
	// gives up).
	Hold <-chan struct{}
	// Delay waits before answering.
	Delay time.Duration
	// Repeat makes a script's last turn answer every later request too.
	Repeat bool
}

// Block is one content block of a reply.
type Block struct {
	// Type is text, thinking, redacted_thinking or tool_use.
	Type string
	// Text is a text block's text or a thinking block's thinking.
	Text string
	// Name and Input are a tool_use's tool and input (marshalled to a
	// JSON object).
	Name  string
	Input any
	// forced marks a Verdict's tool_use: its name is the forced tool's.
	forced bool
}

// Text is a reply with one text block.
func Text(s string) Turn { return Turn{Blocks: []Block{{Type: "text", Text: s}}} }

// Thinking is a reply with one thinking block; the server signs it.
func Thinking(s string) Turn { return Turn{Blocks: []Block{{Type: "thinking", Text: s}}} }

// RedactedThinking is a reply with one redacted_thinking block of data the
// server issues.
func RedactedThinking() Turn { return Turn{Blocks: []Block{{Type: "redacted_thinking"}}} }

// ToolUse is a reply that calls one tool.
func ToolUse(name string, input any) Turn {
	return Turn{Blocks: []Block{{Type: "tool_use", Name: name, Input: input}}}
}

// Computer is a reply that calls the computer tool: input is {"action":
// action} and fields.
func Computer(action string, fields map[string]any) Turn {
	input := map[string]any{"action": action}
	for k, v := range fields {
		input[k] = v
	}
	return ToolUse("computer", input)
}

// Verdict is the answer to a request whose tool_choice forces a tool: a
// call of that tool, whatever it is named, with input {success, summary}.
func Verdict(success bool, summary string) Turn {
	return Turn{Blocks: []Block{{Type: "tool_use", forced: true, Input: map[string]any{"success": success, "summary": summary}}}}
}

// Refusal is a stop reason for Reply: the model declined (stop_reason
// "refusal"); alone it is a refusal with no content.
func Refusal() Turn { return Turn{Stop: "refusal"} }

// MaxTokens is a stop reason for Reply: the answer ran into max_tokens.
func MaxTokens() Turn { return Turn{Stop: "max_tokens"} }

// Reply joins turns into one answer: their blocks in order (thinking, then
// text, then several tool calls, say) and the last stop reason, error,
// hold, delay and repeat given.
func Reply(parts ...Turn) Turn {
	var t Turn
	for _, p := range parts {
		t.Blocks = append(t.Blocks, p.Blocks...)
		if p.Stop != "" {
			t.Stop = p.Stop
		}
		if p.Status != 0 {
			t.Status, t.ErrorType, t.Message, t.RetryAfter = p.Status, p.ErrorType, p.Message, p.RetryAfter
		}
		if p.StreamError != "" {
			t.StreamError, t.Message = p.StreamError, p.Message
		}
		t.Broken = t.Broken || p.Broken
		t.Repeat = t.Repeat || p.Repeat
		if p.Hold != nil {
			t.Hold = p.Hold
		}
		t.Delay += p.Delay
	}
	return t
}

// Status is a turn that fails with an HTTP status and an error of errType
// (overloaded_error with 529, rate_limit_error with 429, ...).
func Status(code int, errType string) Turn { return Turn{Status: code, ErrorType: errType} }

// StreamError is a turn whose stream starts and then carries an error event
// of errType. Reply(Text("..."), StreamError(...)) sends the text first.
func StreamError(errType, msg string) Turn { return Turn{StreamError: errType, Message: msg} }

// Broken is a turn whose connection is cut halfway through the answer.
// Reply(Text("..."), Broken()) cuts that text's answer.
func Broken() Turn { return Turn{Broken: true} }

// Done is the usual end of a script: a text answer and a successful verdict.
func Done(summary string) []Turn { return []Turn{Text("I am done."), Verdict(true, summary)} }

// stopReason is the turn's stop reason.
func (t Turn) stopReason() string {
	if t.Stop != "" {
		return t.Stop
	}
	for _, b := range t.Blocks {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// statusOf is the HTTP status of an error type.
func statusOf(errType string) int {
	switch errType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

// defaultMessage is the message of a scripted error without one.
func defaultMessage(errType string) string {
	switch errType {
	case "overloaded_error":
		return "Overloaded"
	case "rate_limit_error":
		return "Number of request tokens has exceeded your per-minute rate limit"
	case "api_error":
		return "Internal server error"
	}
	return strings.ReplaceAll(errType, "_", " ")
}

// writeTurnError answers with a scripted HTTP error.
func writeTurnError(w http.ResponseWriter, t Turn) {
	typ, msg := t.ErrorType, t.Message
	if typ == "" {
		typ = "api_error"
	}
	if msg == "" {
		msg = defaultMessage(typ)
	}
	if t.RetryAfter != "" {
		w.Header().Set("retry-after", t.RetryAfter)
	}
	writeJSON(w, t.Status, errorBody(typ, msg))
}

type script struct {
	turns []Turn
	next  int
}

// Script sets the answers to requests containing marker.
func (s *Server) Script(marker string, turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[marker] = &script{turns: turns}
}

// next picks the script and the turn that answer a request; s.mu is held.
func (s *Server) next(req *request) (string, Turn) {
	if req.isTitle() {
		if s.title != nil {
			return TitleScript, *s.title
		}
		return TitleScript, Text("")
	}
	var pick *script
	picked := ""
	if s.Match != nil {
		picked = s.Match(req.body)
	}
	marker := ""
	for m, sc := range s.scripts {
		if s.Match != nil && m != picked || s.Match == nil && !strings.Contains(req.body, m) {
			continue
		}
		if pick == nil || (pick.next >= len(pick.turns) && sc.next < len(sc.turns)) {
			pick, marker = sc, m
		}
	}
	if pick == nil {
		return "", req.defaultTurn()
	}
	switch n := len(pick.turns); {
	case pick.next < n:
		pick.next++
		return marker, pick.turns[pick.next-1]
	case n > 0 && pick.turns[n-1].Repeat:
		return marker, pick.turns[n-1]
	}
	return marker, req.defaultTurn()
}

// defaultTurn answers a request no script answers: the forced tool's
// successful call, or a text answer (after thinking, when the request
// thinks and the model would think here).
func (r *request) defaultTurn() Turn {
	if r.forcedTool() != "" {
		return Verdict(true, "Done.")
	}
	if r.thinksNow() {
		return Reply(Thinking("The task looks finished; I will say so."), Text("Finished."))
	}
	return Text("Finished.")
}
