// Package redacttest spells a secret the ways a hostile guest may show it
// back, for the tests that check that none of them gets through.
package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf16"
)

func each(b []byte, format, sep string) string {
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf(format, c)
	}
	return strings.Join(parts, sep)
}

func eachRune(s, format string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

// Wrap breaks s into lines of n characters, as base64 tools do.
func Wrap(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		b.WriteString(s[i:min(i+n, len(s))])
		b.WriteByte('\n')
	}
	return b.String()
}

// Spellings are the ways a guest may show secret back that core/redact
// promises to catch, by name.
func Spellings(secret string) map[string]string {
	b := []byte(secret)
	b64 := base64.StdEncoding.EncodeToString
	u16 := utf16.Encode([]rune(secret))
	le := make([]byte, 0, 2*len(u16))
	for _, c := range u16 {
		le = append(le, byte(c), byte(c>>8))
	}
	return map[string]string{
		"as is":               secret,
		"upper case":          strings.ToUpper(secret),
		"reversed":            reverse(secret),
		"rot13":               rot13(secret),
		"spaced":              strings.Join(strings.Split(secret, ""), " "),
		"dashed":              strings.Join(strings.Split(secret, ""), "-"),
		"one a line":          strings.Join(strings.Split(secret, ""), "\n"),
		"zero-width joined":   strings.Join(strings.Split(secret, ""), "\u200b"),
		"reversed and spaced": strings.Join(strings.Split(reverse(secret), ""), ". "),
		"fullwidth": strings.Map(func(r rune) rune {
			if r > ' ' && r < 0x7f {
				return r + 0xfee0
			}
			return r
		}, secret),
		"URL-escaped":           url.QueryEscape(secret),
		"all percent-escaped":   each(b, "%%%02X", ""),
		"HTML-escaped":          strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(secret),
		"HTML character codes":  eachRune(secret, "&#%d;"),
		"JSON \\u escapes":      eachRune(secret, `\u%04x`),
		"hex":                   hex.EncodeToString(b),
		"HEX":                   strings.ToUpper(hex.EncodeToString(b)),
		"hex with colons":       each(b, "%02x", ":"),
		"hex 0x list":           each(b, "0x%02X", ", "),
		"hex \\x escapes":       each(b, `\x%02x`, ""),
		"hex of the reversed":   hex.EncodeToString([]byte(reverse(secret))),
		"hex reversed":          reverse(hex.EncodeToString(b)),
		"UTF-16 hex":            hex.EncodeToString(le),
		"base64":                b64(b),
		"base64 at offset 1":    b64([]byte("x" + secret)),
		"base64 at offset 2":    b64([]byte("xy" + secret)),
		"base64 URL unpadded":   base64.RawURLEncoding.EncodeToString([]byte("??>" + secret + "??>")),
		"base64 wrapped":        Wrap(b64([]byte(strings.Repeat("lorem ipsum ", 6)+secret+" and more")), 20),
		"base64 of the reverse": b64([]byte(reverse(secret))),
		"base64 reversed":       reverse(b64(b)),
		"base64 of base64":      b64([]byte(b64(b))),
		"hex of base64":         hex.EncodeToString([]byte(b64(b))),
		"base64 of hex":         b64([]byte(hex.EncodeToString(b))),
		"base64 of spaced":      b64([]byte(strings.Join(strings.Split(secret, ""), " "))),
		"URL-escaped base64":    url.QueryEscape(b64([]byte("?" + secret))),
		"base64 of URL-escaped": b64([]byte(url.QueryEscape(secret))),
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func rot13(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case 'A' <= r && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, s)
}

// DecodedTexts is s and, when it is JSON, every string in it (keys too),
// and theirs in turn: a tool's result is JSON in a string of a request's
// JSON, and a secret escaped in one is plain in the other.
func DecodedTexts(s string) []string {
	out := []string{s}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return out
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, DecodedTexts(x)...)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				walk(k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
