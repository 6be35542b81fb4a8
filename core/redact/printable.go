package redact

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The printable filter. What a guest, a model or a web page wrote reaches
// a terminal, a log line, an export or a page with its control and
// invisible formatting characters shown as escapes, never acted on: an
// escape sequence cannot erase a line from the user's view, and a
// right-to-left override (U+202E) cannot make a name read backwards.
// The escapes are valid inside a JSON string, and JSON output holds no
// control byte raw, so the filter leaves JSON meaning what it meant.

// Printable returns s with every control, formatting or invalid byte
// shown as an escape: C0 controls and invalid bytes as \x1b, DEL, C1
// controls, formatting characters (bidirectional overrides, zero-width
// characters) and line or paragraph separators as \u202e.
func Printable(s string) string {
	if printableAlready(s, false) {
		return s
	}
	return string(appendPrintable(nil, s, false))
}

// PrintableText is Printable for text of several lines: line breaks
// stay (a CR LF becomes a LF), tabs become four spaces.
func PrintableText(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ")
	if printableAlready(s, true) {
		return s
	}
	return string(appendPrintable(nil, s, true))
}

// OneLine is s on one line: its runs of white space, control characters
// and line or paragraph separators made single spaces (a title, say).
func OneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '\u2028' || r == '\u2029' }), " ")
}

// hidden says whether r is shown as an escape (lines keeps LF and TAB).
func hidden(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	}
	return r >= 0xa0 && unicode.Is(unicode.Cf, r)
}

// printableAlready says whether s needs no escape (the common case,
// without a copy).
func printableAlready(s string, lines bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if hidden(rune(c), lines) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || hidden(r, lines) {
			return false
		}
		i += size
	}
	return true
}

func appendPrintable(b []byte, s string, lines bool) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case !hidden(r, lines):
			b = append(b, s[i:i+size]...)
		case r < 0x20:
			b = fmt.Appendf(b, `\x%02x`, r)
		default:
			b = fmt.Appendf(b, `\u%04x`, r)
		}
		i += size
	}
	return b
}

// Writer passes what is written to it through the printable filter,
// line breaks and tabs kept: a terminal behind it receives no control
// byte but LF and TAB. A character cut between two writes is held until
// the next; Flush writes what is held.
type Writer struct {
	w io.Writer
	// held is the start of a character the last write cut.
	held []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer.
func (x *Writer) Write(p []byte) (int, error) {
	buf := append(x.held, p...)
	cut := len(buf)
	// A character's first bytes at the end wait for the rest (at most 3).
	for back := 1; back <= utf8.UTFMax-1 && back <= len(buf); back++ {
		c := buf[len(buf)-back]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-back:]) {
				cut = len(buf) - back
			}
			break
		}
	}
	x.held = append([]byte(nil), buf[cut:]...)
	if _, err := x.w.Write(appendPrintable(nil, string(buf[:cut]), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held, as escapes (it is not a whole character).
func (x *Writer) Flush() error {
	if len(x.held) == 0 {
		return nil
	}
	_, err := x.w.Write(appendPrintable(nil, string(x.held), true))
	x.held = nil
	return err
}
