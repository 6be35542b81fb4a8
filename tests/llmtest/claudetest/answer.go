package claudetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// answer is a reply ready to send.
type answer struct {
	id     string
	model  string
	blocks []outBlock
	stop   string
	usage  Usage
}

// outBlock is a content block of a reply.
type outBlock struct {
	typ       string
	text      string // a text's text, a thinking's thinking
	signature string
	data      string
	id, name  string
	input     json.RawMessage
}

// answer builds the reply of a turn to a request, checking first that the
// real model could have given it.
func (s *Server) answer(r *request, t Turn) (*answer, error) {
	if err := r.checkTurn(t); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	a := &answer{id: "msg_01" + s.mac("msg", n)[:22], model: r.model, stop: t.stopReason()}
	for i, b := range t.Blocks {
		o := outBlock{typ: b.Type, text: b.Text}
		switch b.Type {
		case "thinking":
			o.signature = s.sign(b.Text)
		case "redacted_thinking":
			o.data = s.redact(fmt.Sprintf("%d.%d", n, i))
		case "tool_use":
			o.name = b.Name
			if b.forced {
				o.name = r.forcedTool()
			}
			input := b.Input
			if input == nil {
				input = map[string]any{}
			}
			raw, err := json.Marshal(input)
			if err != nil {
				return nil, fmt.Errorf("tool %s input: %w", o.name, err)
			}
			o.input = raw
			o.id = "toolu_01" + s.mac("toolu", n, i)[:22]
		}
		a.blocks = append(a.blocks, o)
	}
	return a, nil
}

// outputTokens estimates the reply's size.
func (a *answer) outputTokens() int {
	n := 0
	for _, b := range a.blocks {
		n += len(b.text) + len(b.data) + len(b.name) + len(b.input)
	}
	return max(1, tokens(n))
}

// checkTurn refuses a script's answer that the real model could not give
// to this request.
func (r *request) checkTurn(t Turn) error {
	var uses []Block
	for i, b := range t.Blocks {
		switch b.Type {
		case "text":
		case "thinking", "redacted_thinking":
			switch {
			case r.thinking != "enabled":
				return errors.New("a thinking block answers a request without extended thinking enabled")
			case r.interleaved():
			case !r.thinksNow():
				return errors.New("a thinking block after tool results: without the interleaved-thinking-2025-05-14 beta the model thinks only at the start of a turn")
			case i > 0 && !isThinking(t.Blocks[i-1].Type):
				return errors.New("a thinking block after other blocks: without interleaved thinking the model thinks first")
			}
		case "tool_use":
			if err := r.checkToolUse(b); err != nil {
				return err
			}
			uses = append(uses, b)
		default:
			return fmt.Errorf("unknown block type %q", b.Type)
		}
	}
	if len(t.Blocks) > 0 && r.thinksNow() && !isThinking(t.Blocks[0].Type) {
		return errors.New("with extended thinking enabled, an answer that starts a turn begins with thinking: add Thinking to the reply")
	}
	if t.Stop == "refusal" || len(t.Blocks) == 0 && (t.StreamError != "" || t.Broken) {
		return nil // a refusal or an error answers any request
	}
	if len(uses) > 1 && r.choice.noParallel {
		return fmt.Errorf("%d tool calls in one answer, and the request set disable_parallel_tool_use", len(uses))
	}
	switch r.choice.typ {
	case "none":
		if len(uses) > 0 {
			return errors.New(`a tool call answers a request whose tool_choice is "none"`)
		}
	case "tool", "any":
		calls := len(t.Blocks) > 0 && t.Blocks[0].Type == "tool_use" &&
			(r.choice.typ == "any" || t.Blocks[0].forced || t.Blocks[0].Name == r.choice.name)
		if !calls {
			return fmt.Errorf("the request forces a tool call (tool_choice %s %q); the answer must begin with it (Verdict calls the forced tool)", r.choice.typ, r.choice.name)
		}
	}
	return nil
}

// checkToolUse refuses a call of a tool the request did not declare, and a
// computer action its tool version does not have.
func (r *request) checkToolUse(b Block) error {
	if b.forced {
		if r.forcedTool() == "" {
			return errors.New("Verdict answers a request whose tool_choice forces a tool; this request forces none")
		}
		return nil
	}
	t := r.tool(b.Name)
	if t == nil {
		var names []string
		for _, t := range r.tools {
			names = append(names, t.name)
		}
		return fmt.Errorf("a call of tool %q, which the request does not declare (it declares %v)", b.Name, names)
	}
	if computerBetas[t.typ] == "" {
		return nil
	}
	raw, _ := json.Marshal(b.Input)
	var in struct {
		Action     string `json:"action"`
		Coordinate []int  `json:"coordinate"`
		Region     []int  `json:"region"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("computer input %s: %w", raw, err)
	}
	actions := []string{"key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
		"double_click", "triple_click", "screenshot", "cursor_position", "left_mouse_down", "left_mouse_up", "scroll",
		"hold_key", "wait"}
	if t.typ == "computer_20251124" && t.zoom {
		actions = append(actions, "zoom")
	}
	if !slices.Contains(actions, in.Action) {
		return fmt.Errorf("computer action %q is not one of %s (enable_zoom %v) actions", in.Action, t.typ, t.zoom)
	}
	if c := in.Coordinate; c != nil && (len(c) != 2 || c[0] < 0 || c[1] < 0 || c[0] >= t.width || c[1] >= t.height) {
		return fmt.Errorf("computer coordinate %v is outside the declared %dx%d display", c, t.width, t.height)
	}
	if in.Action == "zoom" && len(in.Region) != 4 {
		return fmt.Errorf("computer zoom needs a region [x1, y1, x2, y2], got %v", in.Region)
	}
	return nil
}

// sign is the signature of a thinking text.
func (s *Server) sign(text string) string {
	m := hmac.New(sha256.New, s.signKey)
	m.Write([]byte("thinking\x00" + text))
	return "Eq" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// redact is the data of a redacted_thinking block named nonce.
func (s *Server) redact(nonce string) string {
	return base64.StdEncoding.EncodeToString([]byte(nonce + "." + s.mac("redacted", nonce)))
}

// issued reports whether data is redacted_thinking data this server gave.
func (s *Server) issued(data string) bool {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(raw), '.')
	return i > 0 && hmac.Equal(raw[i+1:], []byte(s.mac("redacted", string(raw[:i]))))
}

// mac is a hex HMAC of parts under the server's key.
func (s *Server) mac(parts ...any) string {
	m := hmac.New(sha256.New, s.signKey)
	fmt.Fprint(m, fmt.Sprintln(parts...))
	return hex.EncodeToString(m.Sum(nil))
}
