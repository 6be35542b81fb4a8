package redact

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How a text is searched. A text is seen through views: itself, and, when
// it holds escapes (%41, \x41, \u0041, &#65;, \n), the text they stand
// for. Each byte of a view knows the span of the original it came from.
// In each view:
//   - its letters and digits, case- and width-folded, the rest dropped
//     (spaces, punctuation, invisible and combining characters, at most
//     maxGap between two letters), are searched for the secret's letters
//     and digits, forwards, backwards and in ROT13;
//   - its runs of base64 and of hex digits are decoded (each alignment,
//     and the run reversed) and what they decode to is searched again, to
//     maxDepth decodings.
// The secret itself, and reversed, is also looked for byte for byte.

const (
	// minCore is the fewest letters and digits a secret needs to be looked
	// for spaced out (fewer would match ordinary text).
	minCore = 6
	// maxGap is the most characters dropped between two of a spaced-out
	// secret's.
	maxGap = 8
	// minRun is the shortest run of base64 or hex digits decoded.
	minRun = 8
	// wrapped is the shortest line of base64 joined with the next (the
	// tools wrap at 60 to 76 characters).
	wrapped = 16
	// maxDepth is the most encodings peeled off one another.
	maxDepth = 3
)

// secret is a secret and the forms it is looked for in.
type secret struct {
	raw, rev string
	label    string
	// needles are its letters and digits, folded: forwards, backwards, and
	// ROT13 of both (none when it has fewer than minCore).
	needles []needle
}

// needle is a secret's letters and digits in one order, and the other
// characters the secret has before the first and after the last of them
// in that order, as they read left to right (a match takes them along).
type needle struct {
	s           []byte
	left, right []rune
}

func newSecret(raw, label string) *secret {
	s := &secret{raw: raw, rev: reverseRunes(raw), label: label}
	var core, lead, trail []rune
	for _, r := range raw {
		switch {
		case isAlnum(r):
			core = append(core, fold(r))
			trail = nil
		case len(core) == 0:
			lead = append(lead, fold(r))
		default:
			trail = append(trail, fold(r))
		}
	}
	if len(core) < minCore {
		return s
	}
	fwd, back := string(core), reverseRunes(string(core))
	rl, rt := []rune(reverseRunes(string(lead))), []rune(reverseRunes(string(trail)))
	for _, n := range []needle{
		{[]byte(fwd), lead, trail}, {[]byte(back), rt, rl},
		{[]byte(rot13(fwd)), lead, trail}, {[]byte(rot13(back)), rt, rl},
	} {
		if !slices.ContainsFunc(s.needles, func(m needle) bool { return bytes.Equal(m.s, n.s) }) {
			s.needles = append(s.needles, n)
		}
	}
	return s
}

// span is a part of a text that carries a secret, and what replaces it.
type span struct {
	lo, hi int
	label  string
}

// uncheckedLabel replaces an encoded run that was not decoded because the
// scan's work budget ran out (a guest that nests encodings to exhaust it).
const uncheckedLabel = "[redacted: too deeply encoded to check]"

// scanner is one Redact call's search.
type scanner struct {
	secrets []*secret
	// masked marks the bytes of the window being scanned that are labels
	// (a label is never redacted again); nil when none.
	masked []bool
	// work counts the bytes decoded, against budget.
	work, budget int
}

func newScanner(secrets []*secret, n int) *scanner {
	return &scanner{secrets: secrets, budget: 64*n + 1<<20}
}

// labels marks where the known labels are in s (nil without any).
func (sc *scanner) labels(s string) []bool {
	var m []bool
	for _, sec := range sc.secrets {
		for at := 0; ; {
			i := strings.Index(s[at:], sec.label)
			if i < 0 {
				break
			}
			if m == nil {
				m = make([]bool, len(s))
			}
			for j := at + i; j < at+i+len(sec.label); j++ {
				m[j] = true
			}
			at += i + len(sec.label)
		}
	}
	return m
}

func (sc *scanner) inLabel(sp span) bool {
	if sc.masked == nil {
		return false
	}
	for i := sp.lo; i < sp.hi && i < len(sc.masked); i++ {
		if sc.masked[i] {
			return true
		}
	}
	return false
}

// spans finds what carries a secret in b (depth: encodings peeled off to
// reach it).
func (sc *scanner) spans(b []byte, depth int) []span {
	var out []span
	for _, sec := range sc.secrets {
		for _, form := range []string{sec.raw, sec.rev} {
			for at := 0; ; {
				i := bytes.Index(b[at:], []byte(form))
				if i < 0 {
					break
				}
				out = append(out, span{at + i, at + i + len(form), sec.label})
				at += i + len(form)
			}
		}
	}
	var masked []bool
	if depth == 0 {
		masked = sc.masked
	}
	views := []view{identity(b)}
	if u, ok := unescape(b); ok {
		views = append(views, u)
	}
	for _, v := range views {
		out = sc.projected(v, masked, out)
		for _, r := range base64Runs(v, masked) {
			out = sc.decoded(r, depth, decodeBase64, out)
		}
		for _, r := range hexRuns(v, masked) {
			out = sc.decoded(r, depth, decodeHex, out)
		}
	}
	return out
}

// projected finds the secrets' letters and digits in v's.
func (sc *scanner) projected(v view, masked []bool, out []span) []span {
	if !sc.anyNeedles() {
		return out
	}
	p := project(v, masked)
	for _, sec := range sc.secrets {
		for _, n := range sec.needles {
			for at := 0; ; {
				i := bytes.Index(p.s[at:], n.s)
				if i < 0 {
					break
				}
				lo, hi := at+i, at+i+len(n.s)
				vlo, vhi := widen(v, masked, p.vs[lo], p.ve[hi-1], n.left, n.right)
				out = append(out, span{v.lo[vlo], v.hi[vhi-1], sec.label})
				at = hi
			}
		}
	}
	return out
}

// widen extends v[lo:hi] over the secret's characters around its
// letters and digits (left and right, as they read), each of which may
// follow maxGap others, as its letters may.
func widen(v view, masked []bool, lo, hi int, left, right []rune) (int, int) {
	at := func(i int) (rune, bool) { // the character at i, and whether it may be passed
		r, _ := utf8.DecodeRune(v.b[i:])
		return fold(r), !isAlnum(r) && (masked == nil || !masked[v.lo[i]])
	}
	before := func(i int) int {
		for i--; i > 0 && !utf8.RuneStart(v.b[i]); i-- {
		}
		return i
	}
	for k := len(left) - 1; k >= 0; k-- {
		i, found := lo, false
		for gap := 0; gap <= maxGap && i > 0 && !found; gap++ {
			i = before(i)
			r, ok := at(i)
			if !ok {
				break
			}
			found = r == left[k]
		}
		if !found {
			break
		}
		lo = i
	}
	for _, want := range right {
		i, found := hi, false
		for gap := 0; gap <= maxGap && i < len(v.b) && !found; gap++ {
			r, ok := at(i)
			if !ok {
				break
			}
			_, size := utf8.DecodeRune(v.b[i:])
			i += size
			found = r == want
		}
		if !found {
			break
		}
		hi = i
	}
	return lo, hi
}

func (sc *scanner) anyNeedles() bool {
	for _, s := range sc.secrets {
		if len(s.needles) > 0 {
			return true
		}
	}
	return false
}

// decoded decodes a run each way dec knows and adds the run's span when
// one of them carries a secret (its inner run's, when that alone does).
func (sc *scanner) decoded(r run, depth int, dec func([]byte, func([]byte) bool) bool, out []span) []span {
	if depth >= maxDepth {
		return out
	}
	for _, r := range []*run{r.inner, &r} {
		if r == nil {
			continue
		}
		label := ""
		over := dec(r.digits, func(b []byte) bool {
			sc.work += len(b)
			if sc.work > sc.budget {
				label = uncheckedLabel
				return true
			}
			if sec := sc.holds(b, depth+1); sec != nil {
				label = sec.label
				return true
			}
			return false
		})
		if over {
			return append(out, span{r.lo, r.hi, label})
		}
	}
	return out
}

// holds returns the secret that decoded bytes carry, nil if none.
func (sc *scanner) holds(b []byte, depth int) *secret {
	texts := append([][]byte{b}, utf16Parts(b)...)
	for _, t := range texts {
		for _, sec := range sc.secrets {
			if bytes.Contains(t, []byte(sec.raw)) || bytes.Contains(t, []byte(sec.rev)) {
				return sec
			}
		}
	}
	for _, t := range texts {
		for _, part := range textParts(t) {
			for _, sp := range sc.spans(part, depth) {
				for _, sec := range sc.secrets {
					if sec.label == sp.label {
						return sec
					}
				}
				return &secret{label: sp.label}
			}
		}
	}
	return nil
}

// utf16Parts are the stretches of b that are UTF-16 of Latin-1 text
// (every other byte zero), in either byte order and at either alignment,
// as UTF-8.
func utf16Parts(b []byte) [][]byte {
	if bytes.IndexByte(b, 0) < 0 {
		return nil
	}
	var parts [][]byte
	for _, big := range []bool{false, true} {
		for start := 0; start < 2; start++ {
			var cur []byte
			n := 0
			for i := start; i+1 < len(b); i += 2 {
				lo, hi := b[i], b[i+1]
				if big {
					lo, hi = hi, lo
				}
				if hi == 0 && lo != 0 {
					cur = utf8.AppendRune(cur, rune(lo))
					n++
					continue
				}
				if n >= MinSecret {
					parts = append(parts, cur)
				}
				cur, n = nil, 0
			}
			if n >= MinSecret {
				parts = append(parts, cur)
			}
		}
	}
	return parts
}

// textParts are the stretches of decoded bytes that read as text, of
// minRun bytes or more: what a decoding at the wrong alignment gives is
// not, and is not searched further.
func textParts(b []byte) [][]byte {
	var parts [][]byte
	start := 0
	for i := 0; i <= len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if i < len(b) && r != utf8.RuneError && (r >= 0x20 && r != 0x7f || r == '\n' || r == '\t' || r == '\r') {
			i += size
			continue
		}
		if i-start >= minRun {
			parts = append(parts, b[start:i])
		}
		i += max(size, 1)
		start = i
	}
	return parts
}

// view is a text as seen one way: its bytes, each with the span of the
// original it stands for.
type view struct {
	b      []byte
	lo, hi []int
}

func identity(b []byte) view {
	v := view{b: b, lo: make([]int, len(b)), hi: make([]int, len(b))}
	for i := range b {
		v.lo[i], v.hi[i] = i, i+1
	}
	return v
}

func (v *view) add(c byte, lo, hi int) {
	v.b = append(v.b, c)
	v.lo = append(v.lo, lo)
	v.hi = append(v.hi, hi)
}

// projection is a view's letters and digits, folded; a 0 byte stands
// where more than maxGap characters, or a label, came between two. For
// each of its bytes, vs and ve are where its character starts and ends in
// the view.
type projection struct {
	s      []byte
	vs, ve []int
}

func project(v view, masked []bool) projection {
	var p projection
	gap := maxGap + 1
	var enc [utf8.UTFMax]byte
	for i := 0; i < len(v.b); {
		r, size := utf8.DecodeRune(v.b[i:])
		switch {
		case masked != nil && masked[v.lo[i]]:
			gap = maxGap + 1
		case isAlnum(r):
			if gap > maxGap && len(p.s) > 0 {
				p.s, p.vs, p.ve = append(p.s, 0), append(p.vs, 0), append(p.ve, 0)
			}
			n := utf8.EncodeRune(enc[:], fold(r))
			for _, c := range enc[:n] {
				p.s, p.vs, p.ve = append(p.s, c), append(p.vs, i), append(p.ve, i+size)
			}
			gap = 0
		default:
			gap++
		}
		i += size
	}
	return p
}

func isAlnum(r rune) bool {
	return r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') ||
		r >= utf8.RuneSelf && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// fold maps a letter or digit to the one it is compared as: fullwidth
// forms to ASCII, then lower case.
func fold(r rune) rune {
	if r >= 0xff01 && r <= 0xff5e {
		r -= 0xfee0
	}
	return unicode.ToLower(r)
}

func rot13(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case 'A' <= c && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}

func reverseRunes(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
