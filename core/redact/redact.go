// Package redact keeps what Hivecrew shows safe to show. It holds the one
// redactor and the one printable filter that every string bound for the
// model, an event, the trace, the database, an export, a webhook or a
// terminal passes through, error text included.
//
// A Redactor replaces the secrets a task knows (the credentials it may
// type, its secret provisioned variables) with "[secret: NAME]" wherever
// they appear, in the spellings a guest shows them back in: as they are,
// in any case, reversed, ROT13, characters separated by spaces,
// punctuation or invisible characters, URL-, HTML-, JSON- or
// backslash-escaped, in hex (any case, separated, 0x and \x prefixed,
// UTF-16) and in base64 (standard or URL alphabet, padded or not, wrapped
// over lines, at any alignment, reversed), and these nested up to three
// encodings deep. The promise and its limit: these spellings are caught;
// a guest that has seen a secret can always encode it some other way (a
// cipher, an image, one character per step), and no redactor catches
// that. The time a Redact takes is linear in its input.
//
// Printable and PrintableText show control characters and bidirectional
// overrides as escapes; Writer applies them to a stream (a terminal).
package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// MinSecret is the shortest secret redacted: a shorter one would be found
// in everything.
const MinSecret = 4

// Redactor replaces known secrets. Its methods are safe for concurrent
// use; the zero value knows no secret.
type Redactor struct {
	// mu guards secrets, which only grows (a secret is never changed).
	mu      sync.Mutex
	secrets []*secret
}

// Add makes the redactor replace value with "[secret: name]". A secret
// shorter than MinSecret is not added; adding one twice changes nothing.
func (d *Redactor) Add(value, name string) {
	if len(value) < MinSecret {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if slices.ContainsFunc(d.secrets, func(s *secret) bool { return s.raw == value }) {
		return
	}
	d.secrets = append(d.secrets, newSecret(value, "[secret: "+name+"]"))
}

// known is the secrets added so far.
func (d *Redactor) known() []*secret {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.secrets
}

// maxJSON bounds the answers decoded as JSON (a larger one is redacted as
// text, which finds the same secrets but may leave it invalid JSON).
const maxJSON = 4 << 20

// Redact returns s with every known secret replaced, in every spelling
// the package names. A JSON document stays valid JSON: its strings (keys
// too) are redacted after they are decoded, however the guest escaped
// them.
func (d *Redactor) Redact(s string) string {
	secrets := d.known()
	if len(secrets) == 0 || s == "" {
		return s
	}
	sc := newScanner(secrets, len(s))
	if t := strings.TrimSpace(s); len(t) <= maxJSON && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") || strings.HasPrefix(t, `"`)) {
		var v any
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		if dec.Decode(&v) == nil && !dec.More() {
			changed := false
			if b, err := json.Marshal(sc.redactValue(v, &changed)); err == nil && changed {
				s = string(b)
			}
		}
	}
	return sc.redact(s)
}

// redactValue redacts the strings of a decoded JSON value (keys too),
// and notes whether one changed.
func (sc *scanner) redactValue(v any, changed *bool) any {
	str := func(s string) string {
		r := sc.redact(s)
		*changed = *changed || r != s
		return r
	}
	switch x := v.(type) {
	case string:
		return str(x)
	case []any:
		for i := range x {
			x[i] = sc.redactValue(x[i], changed)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[str(k)] = sc.redactValue(e, changed)
		}
		return out
	}
	return v
}

// Windows: a long text is scanned a window at a time, each reaching
// overlap into the next, so that the memory a scan needs stays bounded and
// a secret across a window's end is found in the next.
const (
	window  = 256 << 10
	overlap = 16 << 10
)

// redact replaces the spans of s that carry a secret.
func (sc *scanner) redact(s string) string {
	var spans []span
	for start := 0; start < len(s); start += window {
		end := min(len(s), start+window+overlap)
		part := s[start:end]
		sc.masked = sc.labels(part)
		for _, sp := range sc.spans([]byte(part), 0) {
			if !sc.inLabel(sp) {
				sp.lo, sp.hi = sp.lo+start, sp.hi+start
				spans = append(spans, sp)
			}
		}
		if end == len(s) {
			break
		}
	}
	sc.masked = nil
	return replace(s, spans)
}

// replace writes s with each span replaced by its label; spans that
// overlap are one.
func replace(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo - b.lo })
	var b strings.Builder
	at := 0
	for i := 0; i < len(spans); {
		sp := spans[i]
		for i++; i < len(spans) && spans[i].lo < sp.hi; i++ {
			sp.hi = max(sp.hi, spans[i].hi)
		}
		lo, hi := runeStart(s, sp.lo), runeEnd(s, sp.hi)
		if lo < at {
			lo = at
		}
		b.WriteString(s[at:lo])
		b.WriteString(sp.label)
		at = hi
	}
	b.WriteString(s[at:])
	return b.String()
}

// runeStart backs i up to the start of the character it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeEnd moves i on to the end of the character it is in.
func runeEnd(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
