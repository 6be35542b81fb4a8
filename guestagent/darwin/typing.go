package darwin

import (
	"unicode"
	"unicode/utf16"
)

// Typing text on macOS. A keyboard event carries a virtual key code and,
// optionally, the text it types (CGEventKeyboardSetUnicodeString). Apps
// that read the text (text fields) type what the event says; apps that
// read the key code (games, remote desktops, terminals' key handling,
// some Electron and Java apps) act on the key. A character the current
// keyboard layout types with one key, with or without Shift, is posted
// with that key's code and flags (and its text, so that a text field gets
// exactly it); only characters no such key types (emoji, other scripts,
// what needs Option or a dead key) go as text on the event of key code 0,
// as every macOS text injector does, since no key code means "none".

// layoutKeys is how many virtual key codes a layout is read for (the
// Carbon kVK_* codes are below 128).
const layoutKeys = 128

// keyOutput is what one key of the current layout types in one shift
// state: its text (UCKeyTranslate's), or dead when the key starts a dead
// key sequence (an accent typed with the next key).
type keyOutput struct {
	text string
	dead bool
}

// typedKey is the key that types a character: its code, with Shift or not.
type typedKey struct {
	code  uint16
	shift bool
}

// notTyping are the keys of the layout that do not type a character into
// text (return, tab, delete, escape, the keypad, function and arrow keys
// produce control or private-use characters, which are left out anyway,
// but the keypad types digits that the main row types too, with its own
// numeric-pad flag: the main row is what a hand uses).
var notTyping = func() map[uint16]bool {
	m := map[uint16]bool{}
	for name, code := range keyCodes {
		if len([]rune(name)) > 1 && name != "space" { // named keys: return, f5, kp1, …
			m[code] = true
		}
	}
	return m
}()

// layoutTable builds, from what each key of the current layout types
// without and with Shift (out), the key that types each character: the
// unshifted layer before the shifted one, then the lowest key code. Dead
// keys, keys that type more or less than one character, and characters
// that are not printable (controls, private-use function-key characters)
// are left out.
func layoutTable(out func(code uint16, shift bool) keyOutput) map[rune]typedKey {
	table := map[rune]typedKey{}
	for _, shift := range []bool{false, true} {
		for code := uint16(0); code < layoutKeys; code++ {
			if notTyping[code] {
				continue
			}
			o := out(code, shift)
			rs := []rune(o.text)
			if o.dead || len(rs) != 1 || !typable(rs[0]) {
				continue
			}
			if _, taken := table[rs[0]]; !taken {
				table[rs[0]] = typedKey{code: code, shift: shift}
			}
		}
	}
	return table
}

// typable says whether a key's character is text a key should type.
func typable(r rune) bool {
	return r == ' ' || (unicode.IsGraphic(r) && !unicode.Is(unicode.Co, r))
}

// stroke is one key press (down and up) that types text: the key code,
// the event flags, and the text the events carry (none for return and tab).
type stroke struct {
	code  uint16
	flags uint64
	text  []uint16
}

// unicodeOnlyCode is the key code of a character no key of the layout
// types: the event's text is what counts.
const unicodeOnlyCode = 0

// typingPlan turns text into strokes on a layout (table; nil when the
// layout could not be read: every character then goes as text). A line
// break ("\n", "\r" or "\r\n") is the Return key, a tab the Tab key.
func typingPlan(text string, table map[rune]typedKey) []stroke {
	var out []stroke
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\r', '\n':
			if r == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			out = append(out, stroke{code: keyCodes["return"]})
			continue
		case '\t':
			out = append(out, stroke{code: keyCodes["tab"]})
			continue
		}
		s := stroke{code: unicodeOnlyCode, text: utf16.Encode([]rune{r})}
		if k, ok := table[r]; ok {
			s.code = k.code
			if k.shift {
				s.flags = flagShift
			}
		}
		out = append(out, s)
	}
	return out
}
