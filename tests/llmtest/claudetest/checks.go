package claudetest

import (
	"slices"
	"strings"
)

// check applies the rules that span a request's parts, after its fields
// were read.
func (s *Server) check(r *request) error {
	for _, c := range []func() error{r.checkToolBlocks, r.checkPairing, func() error { return s.checkThinking(r) },
		r.checkCacheControl, r.checkImages} {
		if err := c(); err != nil {
			return err
		}
	}
	r.units = r.prompt()
	if total, limit := r.units[len(r.units)-1].tokens, s.contextTokens(); total > limit {
		return invalid("prompt is too long: %d tokens > %d maximum", total, limit)
	}
	return nil
}

// checkToolBlocks: tool_use ids are unique, and tool blocks need tools.
func (r *request) checkToolBlocks() error {
	seen := map[string]bool{}
	used := false
	for _, m := range r.messages {
		for _, b := range m.blocks {
			switch b.typ {
			case "tool_use":
				if seen[b.id] {
					return invalid("%s: `tool_use` ids must be unique", b.path)
				}
				seen[b.id] = true
				used = true
			case "tool_result":
				used = true
			}
		}
	}
	if used && len(r.tools) == 0 {
		return invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	return nil
}

// toolUses are the ids of an assistant message's tool_use blocks.
func (m *message) toolUses() []string {
	var ids []string
	for _, b := range m.blocks {
		if b.typ == "tool_use" {
			ids = append(ids, b.id)
		}
	}
	return ids
}

func (m *message) hasToolResult() bool {
	return slices.ContainsFunc(m.blocks, func(b *block) bool { return b.typ == "tool_result" })
}

// checkPairing: every tool_use is answered by a tool_result in the next
// message, the tool_results come first there, and no tool_result answers
// a call the previous message did not make.
func (r *request) checkPairing() error {
	for i, m := range r.messages {
		if m.role == "user" {
			var called []string
			if i > 0 && r.messages[i-1].role == "assistant" {
				called = r.messages[i-1].toolUses()
			}
			for _, b := range m.blocks {
				if b.typ == "tool_result" && !slices.Contains(called, b.toolUseID) {
					return invalid("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", b.path, b.toolUseID)
				}
			}
			continue
		}
		ids := m.toolUses()
		if len(ids) == 0 {
			continue
		}
		var answered []string
		leading := 0
		if i+1 < len(r.messages) && r.messages[i+1].role == "user" {
			next := r.messages[i+1]
			for _, b := range next.blocks {
				if b.typ == "tool_result" {
					answered = append(answered, b.toolUseID)
				}
			}
			for leading < len(next.blocks) && next.blocks[leading].typ == "tool_result" {
				leading++
			}
		}
		var missing []string
		for _, id := range ids {
			if !slices.Contains(answered, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalid("%s: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", m.path, strings.Join(missing, ", "))
		}
		if leading < len(ids) {
			return invalid("%s: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", r.messages[i+1].path, len(ids))
		}
	}
	return nil
}

// checkThinking: thinking blocks come back as issued, and a tool loop
// under extended thinking keeps the thinking its turn began with.
func (s *Server) checkThinking(r *request) error {
	for _, m := range r.messages {
		if m.role != "assistant" {
			continue
		}
		for _, b := range m.blocks {
			switch {
			case b.typ == "thinking" && b.signature != s.sign(b.text):
				return invalid("%s: Invalid `signature` in `thinking` block", b.path)
			case b.typ == "redacted_thinking" && !s.issued(b.data):
				return invalid("%s: Invalid `data` in `redacted_thinking` block", b.path)
			}
		}
		if n := len(m.blocks); n > 0 && m.blocks[n-1].typ == "thinking" {
			return invalid("%s: The final block in an assistant message cannot be `thinking`.", m.path)
		}
	}
	last := r.messages[len(r.messages)-1]
	if r.thinking != "enabled" && last.role == "assistant" {
		for _, b := range last.blocks {
			if isThinking(b.typ) {
				return invalid("%s: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.", b.path)
			}
		}
	}
	if r.thinking != "enabled" || !r.continuesTurn() {
		return nil
	}
	// The turn began after the last user message that answers no tool.
	start := 0
	for j := len(r.messages) - 2; j >= 0; j-- {
		if m := r.messages[j]; m.role == "user" && !m.hasToolResult() {
			start = j + 1
			break
		}
	}
	for _, m := range r.messages[start:] {
		if m.role != "assistant" || len(m.blocks) == 0 {
			continue
		}
		if first := m.blocks[0]; !isThinking(first.typ) {
			return invalid("%s.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", first.path, first.typ)
		}
		break
	}
	return nil
}

func isThinking(typ string) bool { return typ == "thinking" || typ == "redacted_thinking" }

// checkCacheControl: at most 4 breakpoints in tools, system and messages.
func (r *request) checkCacheControl() error {
	n := 0
	for _, t := range r.tools {
		if t.cache != nil {
			n++
		}
	}
	for _, b := range r.system {
		if b.cache != nil {
			n++
		}
	}
	r.blocks(func(_ int, b *block) {
		if b.cache != nil {
			n++
		}
	})
	if n > 4 {
		return invalid("A maximum of 4 blocks with cache_control may be provided. Found %d.", n)
	}
	return nil
}
