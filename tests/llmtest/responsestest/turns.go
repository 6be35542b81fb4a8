package responsestest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Turn is one answer of a script: output items, or a failure.
type Turn struct {
	items []outputItem
	// Status, when set, answers with this HTTP status and OpenAI's error
	// body for it (429 carries a retry-after header of RetryAfter,
	// one second when unset).
	Status     int
	RetryAfter time.Duration
	// fail is a model failure after the response was created: an
	// `error` event (streamError) or response.failed.
	fail *failure
	// incomplete, when set, ends the response incomplete for this reason.
	incomplete string
	// broken cuts the connection in the middle of the answer.
	broken bool
	// Hold, when set, delays the answer until it is closed (or the
	// client gives up).
	Hold <-chan struct{}
	// Delay waits before answering.
	Delay time.Duration
	// Repeat makes a script's last turn answer every later request too.
	Repeat bool
}

type failure struct {
	event         bool // an `error` event, not response.failed
	code, message string
}

// outputItem is one output item a turn plays; ids are given when it is
// served, so a repeated turn's calls are new calls.
type outputItem struct {
	kind    string // "message", "refusal", "reasoning", "function_call", "computer_call"
	text    string // message text or refusal
	summary []string
	name    string
	args    string
	action  map[string]any
	checks  []SafetyCheck // pending safety checks (IDs given when served)
}

// SafetyCheck is a pending safety check of a computer call, as issued and
// as acknowledged.
type SafetyCheck struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Text is a turn that answers with an assistant message.
func Text(s string) Turn { return Turn{items: []outputItem{{kind: "message", text: s}}} }

// Refusal is a turn whose message is a refusal content part.
func Refusal(s string) Turn { return Turn{items: []outputItem{{kind: "refusal", text: s}}} }

// Reasoning is a reasoning item with these summary parts; it carries
// encrypted_content when the request includes
// "reasoning.encrypted_content".
func Reasoning(summary ...string) Turn {
	return Turn{items: []outputItem{{kind: "reasoning", summary: summary}}}
}

// Call is a function_call of name with args (marshalled to JSON; a
// json.RawMessage is sent as it is).
func Call(name string, args any) Turn {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("responsestest.Call(%q): arguments: %v", name, err))
	}
	return Turn{items: []outputItem{{kind: "function_call", name: name, args: string(b)}}}
}

// Computer is a computer_call with this action, e.g.
// {"type":"click","button":"left","x":10,"y":20}. An action the real API
// would not send panics: it is a mistake in the test.
func Computer(action map[string]any) Turn {
	if msg := checkAction(action); msg != "" {
		panic("responsestest.Computer: " + msg)
	}
	return Turn{items: []outputItem{{kind: "computer_call", action: action}}}
}

// WithSafetyCheck adds a pending safety check (code is e.g.
// "malicious_instructions", "irrelevant_domain", "sensitive_domain") to
// the turn's last computer_call. The next request must acknowledge it.
func WithSafetyCheck(turn Turn, code, message string) Turn {
	turn.items = slices.Clone(turn.items)
	for i := len(turn.items) - 1; i >= 0; i-- {
		if turn.items[i].kind == "computer_call" {
			turn.items[i].checks = append(slices.Clone(turn.items[i].checks), SafetyCheck{Code: code, Message: message})
			return turn
		}
	}
	panic("responsestest.WithSafetyCheck: the turn has no computer_call")
}

// Items is one turn whose output is the items of turns, in order: a
// reasoning item and a call, or parallel calls.
func Items(turns ...Turn) Turn {
	var out Turn
	for _, t := range turns {
		out.items = append(out.items, t.items...)
	}
	return out
}

// Verdict is the JSON answer of a completion check (a request with a
// json_schema text format).
func Verdict(success bool, summary string) Turn {
	b, _ := json.Marshal(map[string]any{"success": success, "summary": summary})
	return Text(string(b))
}

// Done is the usual end of a script: a text answer and a successful verdict.
func Done(summary string) []Turn { return []Turn{Text("I am done."), Verdict(true, summary)} }

// Status is a turn that fails with an HTTP status (429, 500, 503...).
func Status(code int) Turn { return Turn{Status: code} }

// StreamError is a turn whose response is created and then fails with an
// `error` event (a non-streamed request gets HTTP 500 with the code).
func StreamError(code, message string) Turn {
	return Turn{fail: &failure{event: true, code: code, message: message}}
}

// Failed is a turn whose response fails: response.failed with this error
// (a non-streamed request gets the response with status "failed").
func Failed(code, message string) Turn {
	return Turn{fail: &failure{code: code, message: message}}
}

// Incomplete is a turn that ends incomplete for reason
// ("max_output_tokens" or "content_filter") after the outputs' items.
func Incomplete(reason string, outputs ...Turn) Turn {
	t := Items(outputs...)
	t.incomplete = reason
	return t
}

// Broken is a turn whose connection is cut in the middle of the answer.
func Broken() Turn {
	t := Text("This answer is cut off in the middle")
	t.broken = true
	return t
}

// checkAction says what is wrong with a computer action, or "".
func checkAction(a map[string]any) string {
	num := func(k string) bool {
		v, ok := a[k]
		switch n := v.(type) {
		case int, int64:
			return ok
		case float64:
			return ok && n == float64(int64(n))
		}
		return false
	}
	need := func(keys ...string) string {
		for _, k := range keys {
			if !num(k) {
				return fmt.Sprintf("action %q needs an integer %q", a["type"], k)
			}
		}
		return ""
	}
	switch a["type"] {
	case "click":
		switch a["button"] {
		case "left", "right", "wheel", "back", "forward":
			return need("x", "y")
		}
		return fmt.Sprintf("click button %v: want left, right, wheel, back or forward", a["button"])
	case "double_click", "move":
		return need("x", "y")
	case "scroll":
		return need("x", "y", "scroll_x", "scroll_y")
	case "drag":
		path, ok := a["path"].([]any)
		if !ok {
			if p, ok2 := a["path"].([]map[string]any); ok2 {
				for _, pt := range p {
					path = append(path, pt)
				}
				ok = true
			}
		}
		if !ok || len(path) < 2 {
			return "drag needs a path of at least two points"
		}
		for _, p := range path {
			pt, ok := p.(map[string]any)
			if !ok || checkAction(map[string]any{"type": "move", "x": pt["x"], "y": pt["y"]}) != "" {
				return "drag path points need integer x and y"
			}
		}
		return ""
	case "keypress":
		switch keys := a["keys"].(type) {
		case []string:
			if len(keys) > 0 {
				return ""
			}
		case []any:
			if len(keys) > 0 {
				return ""
			}
		}
		return "keypress needs keys"
	case "type":
		if _, ok := a["text"].(string); ok {
			return ""
		}
		return "type needs a text"
	case "screenshot", "wait":
		return ""
	}
	return fmt.Sprintf("unknown action type %v: want click, double_click, drag, keypress, move, screenshot, scroll, type or wait", a["type"])
}
