package responsestest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// The conversation rules: what the server remembers of its own output
// (the items it issued, the responses it stored) and the checks of a
// request's conversation against it.

// issued is an output item this server sent.
type issued struct {
	id, kind, callID string
	// request is the index of the request it answered.
	request int
	// reasoning, for a call, is the reasoning item before it in its output.
	reasoning string
	// next, for a reasoning item, is the item after it in its output.
	next *issued
	// checks are a computer call's pending safety checks.
	checks []SafetyCheck
	// stored items (of a request with store true) can be referred to.
	stored bool
	// item is the item as a client sends it back.
	item *item
}

// storedResponse is a response kept for previous_response_id.
type storedResponse struct {
	context, output []*item
}

// conversation is the request's whole conversation (a previous
// response's, then its input, references resolved), checked: the
// reasoning items and calls as the server issued them, each call
// answered, each safety check acknowledged. s.mu is held.
func (s *Server) conversation(req *request) ([]*item, *apiError) {
	var ctx []*item
	if id := req.PreviousResponseID; id != "" {
		prev := s.responses[id]
		if prev == nil {
			return nil, notFound("previous_response_id", "previous_response_not_found", "Previous response with id '%s' not found.", id)
		}
		ctx = append(slices.Clone(prev.context), prev.output...)
	}
	for _, it := range req.Input {
		switch {
		case it.Type == "item_reference":
			is := s.issued[it.ID]
			if is == nil || !is.stored {
				return nil, s.itemNotFound(it.ID)
			}
			ctx = append(ctx, is.item)
			continue
		case it.Type == "reasoning" && it.EncryptedContent != nil:
			if !s.opens(it.ID, *it.EncryptedContent) {
				return nil, invalid("", "invalid_encrypted_content",
					"The encrypted content for item %s could not be verified. Reason: Encrypted content could not be decrypted or parsed.", it.ID)
			}
		case it.Type == "reasoning":
			if is := s.issued[it.ID]; is == nil || !is.stored {
				return nil, s.itemNotFound(it.ID)
			}
		}
		ctx = append(ctx, it)
	}
	if e := s.checkOrder(ctx); e != nil {
		return nil, e
	}
	return ctx, s.checkCalls(ctx)
}

// itemNotFound refuses a reference to an item the server did not store.
func (s *Server) itemNotFound(id string) *apiError {
	if is := s.issued[id]; is != nil && !is.stored {
		return notFound("input", "", "Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
	}
	return notFound("input", "", "Item with id '%s' not found.", id)
}

// checkOrder refuses a reasoning item without the item that followed it
// in the server's output, and a call without the reasoning item that
// preceded it there.
func (s *Server) checkOrder(ctx []*item) *apiError {
	seen := map[string]bool{}
	for i, it := range ctx {
		is := s.issued[it.ID]
		if it.ID == "" || is == nil {
			continue
		}
		switch it.Type {
		case "reasoning":
			seen[it.ID] = true
			if is.next != nil && (i+1 == len(ctx) || !follows(ctx[i+1], is.next)) {
				return invalid("input", "", "Item '%s' of type 'reasoning' was provided without its required following item.", it.ID)
			}
		case "function_call", "computer_call":
			if is.reasoning != "" && !seen[is.reasoning] {
				return invalid("input", "", "Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.", it.ID, it.Type, is.reasoning)
			}
		}
	}
	return nil
}

// follows reports whether it is want sent back: by id, or without one
// as the same call or an assistant message.
func follows(it *item, want *issued) bool {
	if it.ID != "" || it.Type != want.kind {
		return it.ID == want.id
	}
	if want.kind == "message" {
		return it.Role == "assistant"
	}
	return it.CallID == want.callID
}

// checkCalls refuses a call without its output later in the
// conversation, an output without its call before it, and a computer
// call's output that does not acknowledge exactly its pending safety
// checks.
func (s *Server) checkCalls(ctx []*item) *apiError {
	calls := map[string]*item{}
	answered := map[string]bool{}
	for _, it := range ctx {
		switch it.Type {
		case "function_call", "computer_call":
			calls[it.CallID] = it
		case "function_call_output", "computer_call_output":
			call := calls[it.CallID]
			if call == nil || call.Type+"_output" != it.Type {
				return invalid("input", "", "No tool call found for %s output with call_id %s.", callWord(it.Type), it.CallID)
			}
			answered[it.CallID] = true
			if it.Type == "computer_call_output" {
				if e := s.checkAcks(call, it); e != nil {
					return e
				}
			}
		}
	}
	for _, it := range ctx {
		if (it.Type == "function_call" || it.Type == "computer_call") && !answered[it.CallID] {
			return invalid("input", "", "No tool output found for %s %s.", callWord(it.Type), it.CallID)
		}
	}
	return nil
}

func callWord(typ string) string {
	if strings.HasPrefix(typ, "computer") {
		return "computer call"
	}
	return "function call"
}

// pending is a computer call's pending safety checks: those the server
// issued with it, or, for a call it did not issue, those it carries.
func (s *Server) pending(call *item) []SafetyCheck {
	if is := s.calls[call.CallID]; is != nil {
		return is.checks
	}
	if call.PendingSafetyChecks != nil {
		return *call.PendingSafetyChecks
	}
	return nil
}

func (s *Server) checkAcks(call, out *item) *apiError {
	pending := s.pending(call)
	acked := map[string]bool{}
	for _, a := range out.AcknowledgedSafetyChecks {
		acked[a.ID] = true
	}
	var missing []string
	for _, c := range pending {
		if !acked[c.ID] {
			missing = append(missing, "'"+c.ID+"'")
		}
	}
	if len(missing) > 0 {
		return invalid("input", "", "Computer tool has unacknowledged safety check for [%s]", strings.Join(missing, ", "))
	}
	for _, a := range out.AcknowledgedSafetyChecks {
		if !slices.ContainsFunc(pending, func(c SafetyCheck) bool { return c.ID == a.ID }) {
			return invalid("input", "", "Acknowledged safety check '%s' is not a pending safety check of computer call %s.", a.ID, call.CallID)
		}
	}
	return nil
}

// seal is the encrypted_content of reasoning item id: opaque to the
// client, and signed so that only this server's own, for that item, opens.
func (s *Server) seal(id string) string {
	payload := id + ":" + randomHex(8)
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(payload))
	return "enc_" + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// opens reports whether blob is the server's encrypted_content of item id.
func (s *Server) opens(id, blob string) bool {
	p, sig, ok := strings.Cut(strings.TrimPrefix(blob, "enc_"), ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha256.New, s.secret)
	mac.Write(payload)
	owner, _, _ := strings.Cut(string(payload), ":")
	return hmac.Equal(got, mac.Sum(nil)) && owner == id
}

// issue gives the turn's items their ids and returns them as sent; the
// server remembers them. s.mu is held.
func (s *Server) issue(turn Turn, req *request, index int) []map[string]any {
	encrypted := slices.Contains(req.Include, "reasoning.encrypted_content")
	out := make([]map[string]any, 0, len(turn.items))
	var prev *issued
	reasoning := ""
	for _, spec := range turn.items {
		is := &issued{kind: spec.kind, request: index, stored: req.Store}
		var m map[string]any
		switch spec.kind {
		case "message", "refusal":
			is.kind, is.id = "message", "msg_"+randomHex(24)
			part := map[string]any{"type": "output_text", "text": spec.text, "annotations": []any{}, "logprobs": []any{}}
			if spec.kind == "refusal" {
				part = map[string]any{"type": "refusal", "refusal": spec.text}
			}
			m = map[string]any{"type": "message", "role": "assistant", "status": "completed", "content": []any{part}}
		case "reasoning":
			is.id = "rs_" + randomHex(24)
			summary := []any{}
			for _, t := range spec.summary {
				summary = append(summary, map[string]any{"type": "summary_text", "text": t})
			}
			m = map[string]any{"type": "reasoning", "summary": summary}
			if encrypted {
				m["encrypted_content"] = s.seal(is.id)
			}
			reasoning = is.id
		case "function_call":
			is.id, is.callID = "fc_"+randomHex(24), "call_"+randomHex(12)
			m = map[string]any{"type": "function_call", "status": "completed", "call_id": is.callID, "name": spec.name, "arguments": spec.args}
		case "computer_call":
			is.id, is.callID = "cu_"+randomHex(24), "call_"+randomHex(12)
			for _, c := range spec.checks {
				c.ID = "cu_sc_" + randomHex(24)
				is.checks = append(is.checks, c)
			}
			m = map[string]any{"type": "computer_call", "status": "completed", "call_id": is.callID,
				"action": spec.action, "pending_safety_checks": append([]SafetyCheck{}, is.checks...)}
		}
		m["id"] = is.id
		if is.callID != "" {
			is.reasoning = reasoning
			s.calls[is.callID] = is
		}
		if prev != nil && prev.kind == "reasoning" {
			prev.next = is
		}
		b, _ := json.Marshal(m)
		is.item = &item{}
		json.Unmarshal(b, is.item)
		is.item.segs = (&parser{s: s, model: req.Model}).segments(b)
		is.item.tokens = promptTokens(is.item.segs)
		s.issued[is.id] = is
		prev = is
		out = append(out, m)
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
