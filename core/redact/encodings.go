package redact

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The encodings a scan sees through: escapes (a view of the text they
// stand for), and runs of base64 and hex digits (decoded and searched
// again).

// unescape returns the view of b with its escapes decoded, and whether it
// had any.
func unescape(b []byte) (view, bool) {
	var v view
	changed := false
	for i := 0; i < len(b); {
		if out, n := escapeAt(b, i); n > 0 {
			for _, c := range out {
				v.add(c, i, i+n)
			}
			i += n
			changed = true
			continue
		}
		v.add(b[i], i, i+1)
		i++
	}
	return v, changed
}

// escapeAt decodes the escape at b[i:]: what it stands for and its length
// (0: none). It knows %41, \x41, \u0041, \u{41}, \U00000041, \n and the
// like, &#65;, &#x41; and the five named entities of XML (and &nbsp;).
func escapeAt(b []byte, i int) ([]byte, int) {
	rest := b[i:]
	if len(rest) < 2 {
		return nil, 0
	}
	switch rest[0] {
	case '%':
		if c, ok := hexByte(rest[1:]); ok {
			return []byte{c}, 3
		}
	case '\\':
		switch rest[1] {
		case 'x':
			if c, ok := hexByte(rest[2:]); ok {
				return []byte{c}, 4
			}
		case 'u':
			if len(rest) > 2 && rest[2] == '{' {
				if r, n := hexRune(rest[3:], 1, 6); n > 0 && len(rest) > 3+n && rest[3+n] == '}' {
					return utf8.AppendRune(nil, r), 4 + n
				}
			} else if r, n := hexRune(rest[2:], 4, 4); n > 0 {
				return utf8.AppendRune(nil, r), 2 + n
			}
		case 'U':
			if r, n := hexRune(rest[2:], 8, 8); n > 0 {
				return utf8.AppendRune(nil, r), 2 + n
			}
		case 'n', 't', 'r', 'b', 'f', 'v', '0':
			const from, to = "ntrbfv0", "\n\t\r\b\f\v\x00"
			return []byte{to[strings.IndexByte(from, rest[1])]}, 2
		case '"', '\'', '/':
			// Not \\: a backslash before an escape is read as its own,
			// so that it cannot hide the escape.
			return []byte{rest[1]}, 2
		}
	case '&':
		return entityAt(rest)
	}
	return nil, 0
}

// entityAt decodes an HTML character reference at the start of b.
func entityAt(b []byte) ([]byte, int) {
	if len(b) > 3 && b[1] == '#' {
		digits, base := b[2:], 10
		if b[2] == 'x' || b[2] == 'X' {
			digits, base = b[3:], 16
		}
		n := 0
		for n < len(digits) && n < 7 && (base == 16 && isHexDigit(digits[n]) || '0' <= digits[n] && digits[n] <= '9') {
			n++
		}
		if n == 0 || n >= len(digits) || digits[n] != ';' {
			return nil, 0
		}
		v, err := strconv.ParseUint(string(digits[:n]), base, 32)
		if err != nil {
			return nil, 0
		}
		return utf8.AppendRune(nil, rune(v)), len(b) - len(digits) + n + 1
	}
	for _, e := range entities {
		if len(b) >= len(e.name) && string(b[:len(e.name)]) == e.name {
			return []byte(e.text), len(e.name)
		}
	}
	return nil, 0
}

// entities are the named references entityAt knows.
var entities = [...]struct{ name, text string }{
	{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", `"`}, {"&apos;", "'"}, {"&nbsp;", " "},
}

func hexByte(b []byte) (byte, bool) {
	if len(b) < 2 || !isHexDigit(b[0]) || !isHexDigit(b[1]) {
		return 0, false
	}
	v, _ := strconv.ParseUint(string(b[:2]), 16, 8)
	return byte(v), true
}

// hexRune reads min to max hex digits (as many as there are) as a rune.
func hexRune(b []byte, least, most int) (rune, int) {
	n := 0
	for n < len(b) && n < most && isHexDigit(b[n]) {
		n++
	}
	if n < least {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(b[:n]), 16, 32)
	if err != nil {
		return 0, 0
	}
	return rune(v), n
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// run is a run of base64 or hex digits: the digits alone (base64's in the
// standard alphabet) and the span of the original it covers; inner, if
// set, is the run without the end of a word it starts with or the start
// of one it ends with, which is redacted instead when it alone carries
// the secret (so that a label does not eat the words around it).
type run struct {
	digits []byte
	lo, hi int
	inner  *run
}

func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

// base64Runs finds v's runs of base64: each word of minRun digits or more
// (with its padding, before or after it for a reversed one), and lines of
// one wrapped over several: a line of wrapped digits or more, without
// padding, goes on with the next line if that is digits only.
func base64Runs(v view, masked []bool) []run {
	type seg struct{ pre, i, j, end int } // padding from pre, digits [i, j), padding to end
	var segs []seg
	n := len(v.b)
	ok := func(i int) bool { return isBase64(v.b[i]) && (masked == nil || !masked[v.lo[i]]) }
	for i := 0; i < n; {
		if !ok(i) {
			i++
			continue
		}
		pre := i
		for pre > 0 && i-pre < 2 && v.b[pre-1] == '=' {
			pre--
		}
		j := i
		for j < n && ok(j) {
			j++
		}
		end := j
		for end < n && end-j < 2 && v.b[end] == '=' {
			end++
		}
		segs = append(segs, seg{pre, i, j, end})
		i = end
	}
	digits := func(ss []seg) []byte {
		var d []byte
		for _, s := range ss {
			for _, c := range v.b[s.i:s.j] {
				switch c {
				case '-':
					c = '+'
				case '_':
					c = '/'
				}
				d = append(d, c)
			}
		}
		return d
	}
	// A whole line: from the line's start (after its indent) to its end.
	wholeLine := func(s seg) bool {
		return (s.end == n || v.b[s.end] == '\n' || v.b[s.end] == '\r') && lineBreakOnly(append([]byte{'\n'}, v.b[lineStart(v.b, s.i):s.i]...))
	}
	var runs []run
	for k := 0; k < len(segs); {
		s := segs[k]
		if s.j-s.i >= minRun {
			runs = append(runs, run{digits: digits(segs[k : k+1]), lo: v.lo[s.pre], hi: v.hi[s.end-1]})
		}
		m := k
		for m+1 < len(segs) && segs[m].end == segs[m].j && segs[m].j-segs[m].i >= wrapped &&
			lineBreakOnly(v.b[segs[m].end:segs[m+1].i]) && wholeLine(segs[m+1]) {
			m++
		}
		if m > k {
			runs = append(runs, run{digits: digits(segs[k : m+1]), lo: v.lo[s.pre], hi: v.hi[segs[m].end-1]})
		}
		k = m + 1
	}
	return runs
}

// lineStart is where the line holding b[i] starts.
func lineStart(b []byte, i int) int {
	for i > 0 && b[i-1] != '\n' {
		i--
	}
	return i
}

// lineBreakOnly says whether b is white space with a line break.
func lineBreakOnly(b []byte) bool {
	brk := false
	for _, c := range b {
		switch c {
		case '\n':
			brk = true
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
	return brk
}

// hexSeparator is what may stand between hex digits of one run (at most
// three in a row).
func hexSeparator(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ':', ',', '-', ';', '.', '%', '\\':
		return true
	}
	return false
}

// hexRuns finds v's runs of hex digits, separated or not, with 0x and \x
// prefixes or without.
func hexRuns(v view, masked []bool) []run {
	type token struct{ d, lo, hi int } // first digit in the run's, span
	var runs []run
	var cur []byte
	var toks []token
	start, pre, last, seps := -1, -1, -1, 0
	alnum := func(i int) bool { return i >= 0 && i < len(v.b) && v.b[i] < utf8.RuneSelf && isAlnum(rune(v.b[i])) }
	flush := func() {
		if len(cur) >= minRun {
			r := run{digits: cur, lo: v.lo[start], hi: v.hi[last]}
			// A first token that ends a word, a last one that starts one.
			first, end := 0, len(toks)
			if pre < 0 && alnum(toks[0].lo-1) {
				first = 1
			}
			if alnum(toks[end-1].hi + 1) {
				end--
			}
			if (first > 0 || end < len(toks)) && first < end {
				d0, d1 := toks[first].d, len(cur)
				if end < len(toks) {
					d1 = toks[end].d
				}
				if d1-d0 >= minRun {
					r.inner = &run{digits: cur[d0:d1], lo: v.lo[toks[first].lo], hi: v.hi[toks[end-1].hi]}
				}
			}
			if start == toks[0].lo && pre >= 0 {
				r.lo = v.lo[pre] // its prefix with it
			}
			runs = append(runs, r)
		}
		cur, toks, start, pre, last, seps = nil, nil, -1, -1, -1, 0
	}
	n := len(v.b)
	for i := 0; i < n; {
		c := v.b[i]
		switch {
		case masked != nil && masked[v.lo[i]]:
			flush()
			i++
		case (c == '0' || c == '\\') && i+2 < n && (v.b[i+1] == 'x' || v.b[i+1] == 'X') && isHexDigit(v.b[i+2]) &&
			(c == '\\' || i == 0 || !isHexDigit(v.b[i-1])):
			if start < 0 {
				pre = i
			}
			seps = 0 // a prefix
			i += 2
		case isHexDigit(c):
			if start < 0 {
				start = i
			}
			if last < 0 || last != i-1 || len(toks) == 0 {
				toks = append(toks, token{len(cur), i, i})
			}
			toks[len(toks)-1].hi = i
			cur = append(cur, c)
			last, seps = i, 0
			i++
		case start >= 0 && hexSeparator(c) && seps < 3:
			seps++
			i++
		default:
			flush()
			i++
		}
	}
	flush()
	return runs
}

// decodeBase64 tries what d decodes to at each of its four alignments,
// forwards and reversed, until try says it is found.
func decodeBase64(d []byte, try func([]byte) bool) bool {
	for _, src := range [][]byte{d, reversed(d)} {
		for off := 0; off < 4 && off < len(src); off++ {
			t := src[off:]
			if len(t)%4 == 1 {
				t = t[:len(t)-1]
			}
			out := make([]byte, base64.RawStdEncoding.DecodedLen(len(t)))
			if n, err := base64.RawStdEncoding.Decode(out, t); err == nil && try(out[:n]) {
				return true
			}
		}
	}
	return false
}

// decodeHex tries what d decodes to at both alignments, forwards and
// reversed, until try says it is found.
func decodeHex(d []byte, try func([]byte) bool) bool {
	for _, src := range [][]byte{d, reversed(d)} {
		for off := 0; off < 2 && off < len(src); off++ {
			t := src[off:]
			t = t[:len(t)&^1]
			out := make([]byte, len(t)/2)
			if _, err := hex.Decode(out, t); err != nil {
				continue
			}
			if try(out) {
				return true
			}
		}
	}
	return false
}

func reversed(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}
