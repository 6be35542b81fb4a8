package claudetest

import (
	"crypto/sha256"
)

// lookback is how many blocks before a breakpoint the API looks for a
// cached prefix.
const lookback = 20

// unit is one block of the prompt as the cache sees it: the prompt is
// tools, then system, then the messages' blocks.
type unit struct {
	// hash identifies the prefix that ends with this block (model
	// included); tokens is that prefix's size.
	hash   [32]byte
	tokens int
	// cache is the block's cache_control (a tool_result's, or one of its
	// content's).
	cache *cacheControl
}

// prompt lists the request's blocks in the order the cache sees them.
func (r *request) prompt() []unit {
	h := sha256.New()
	h.Write([]byte(r.model))
	var out []unit
	total := 0
	add := func(tag string, canon []byte, n int, cc *cacheControl) {
		h.Write([]byte{0})
		h.Write([]byte(tag))
		h.Write([]byte{0})
		h.Write(canon)
		total += n
		u := unit{tokens: total, cache: cc}
		h.Sum(u.hash[:0])
		out = append(out, u)
	}
	for _, t := range r.tools {
		add("tool", t.canon, t.tokens, t.cache)
	}
	for _, b := range r.system {
		add("system", b.canon, b.tokens, b.cache)
	}
	for _, m := range r.messages {
		for k, b := range m.blocks {
			tag := m.role
			if k == 0 {
				tag += " starts"
			}
			cc := b.cache
			for _, c := range b.content {
				if c.cache != nil {
					cc = c.cache
				}
			}
			add(tag, b.canon, b.tokens, cc)
		}
	}
	return out
}

// account reports an answered request's usage from the simulated prompt
// cache of key, and remembers the request's breakpoints; s.mu is held.
func (s *Server) account(r *request, key string, output int) Usage {
	store := s.cache[key]
	if store == nil {
		store = map[[32]byte]int{}
		s.cache[key] = store
	}
	units := r.units
	var breaks []int
	for i, u := range units {
		if u.cache != nil {
			breaks = append(breaks, i)
		}
	}
	// Read: the longest remembered prefix that ends within lookback blocks
	// of a breakpoint.
	readAt, read := -1, 0
	for _, b := range breaks {
		for i := b; i >= 0 && i > b-lookback; i-- {
			if _, ok := store[units[i].hash]; ok {
				if i > readAt {
					readAt, read = i, units[i].tokens
				}
				break
			}
		}
	}
	// Write: each breakpoint past what was read, long enough to cache.
	minimum := s.cacheMin(r.model)
	u := Usage{OutputTokens: output, CacheReadInputTokens: read}
	prev := read
	for _, b := range breaks {
		if units[b].tokens < minimum {
			continue
		}
		if b > readAt {
			n := units[b].tokens - prev
			if units[b].cache.ttl == "1h" {
				u.Ephemeral1hInputTokens += n
			} else {
				u.Ephemeral5mInputTokens += n
			}
			prev = units[b].tokens
		}
		store[units[b].hash] = units[b].tokens
	}
	u.CacheCreationInputTokens = u.Ephemeral5mInputTokens + u.Ephemeral1hInputTokens
	u.InputTokens = units[len(units)-1].tokens - read - u.CacheCreationInputTokens
	return u
}
