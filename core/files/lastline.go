package files

import "strings"

// LastLine returns the last non-empty line of what a guest printed,
// Printable, cut to at most max bytes (then ending with "…"): the verdict
// of a command is its last words.
func LastLine(s string, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := Printable(strings.TrimSpace(lines[len(lines)-1]))
	if len(l) > max {
		l = strings.ToValidUTF8(l[:max], "") + "…"
	}
	return l
}
