package redact

import "unicode/utf8"

// escapeTail is how far back an escape cut short at the end may start
// (\U0001F600 is ten bytes).
const escapeTail = 12

// Hold is for text shown as it streams in: it returns how much of s can
// be shown now, redacted on its own, such that nothing that may still
// follow can complete a secret in it. Held back are the last letters and
// digits a spaced-out secret may start with, the last bytes a secret may
// start with, a run of base64 or hex digits still open at the end, and an
// escape cut short. What is held is shown with what follows it, or at the
// end. Without secrets, everything can be shown.
func (d *Redactor) Hold(s string) int {
	secrets := d.known()
	if len(secrets) == 0 {
		return len(s)
	}
	longest, needle := 0, 0
	for _, sec := range secrets {
		longest = max(longest, len(sec.raw))
		for _, n := range sec.needles {
			needle = max(needle, utf8.RuneCount(n.s)+len(n.left)+len(n.right))
		}
	}
	cut := len(s) - (longest - 1)
	if needle > 0 {
		cut = min(cut, spacedStart(s, needle-1))
	}
	cut = min(cut, openRun(s)) - escapeTail
	if cut <= 0 {
		return 0
	}
	return runeStart(s, cut)
}

// spacedStart is where the last n letters and digits of s start that a
// spaced-out secret may go on from (len(s) when the end is too far from
// any).
func spacedStart(s string, n int) int {
	start, gap, seen := len(s), 0, 0
	for i := len(s); i > 0 && seen < n; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		if isAlnum(r) {
			start, gap = i, 0
			seen++
			continue
		}
		if gap++; gap > maxGap {
			break
		}
	}
	return start
}

// openRun is where a run of base64 or hex digits starts that is still
// open at the end of s (len(s) when there is none): a word the next bytes
// may go on, or lines of digits the next line may join.
func openRun(s string) int {
	end := len(s)
	for end > 0 && isSpace(s[end-1]) {
		end--
	}
	i := digitsStart(s, end)
	if i == end || end < len(s) && !digitLine(s[i:end]) {
		return len(s)
	}
	for {
		j := i
		for j > 0 && isSpace(s[j-1]) {
			j--
		}
		k := digitsStart(s, j)
		if j == i || k == j || !digitLine(s[k:j]) {
			return i
		}
		i = k
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// digitsStart backs end up over base64 digits and hex separators (not
// line breaks).
func digitsStart(s string, end int) int {
	i := end
	for i > 0 && (isBase64(s[i-1]) || hexSeparator(s[i-1]) && s[i-1] != '\n') {
		i--
	}
	return i
}

// digitLine says whether a line may be part of a run over several: a
// wrapped line of base64, or hex digits (four or more) and separators.
func digitLine(line string) bool {
	b64, digits := len(line) >= wrapped, 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		b64 = b64 && isBase64(c)
		switch {
		case isHexDigit(c):
			digits++
		case !hexSeparator(c) && c != 'x' && c != 'X':
			digits = -len(line)
		}
	}
	return b64 || digits >= 4
}
