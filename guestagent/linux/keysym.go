package linux

import "strconv"

// X keysyms of the named keys of the protocol (server.NormalizeKey names).
var namedKeysyms = map[string]uint32{
	"return": 0xff0d, "tab": 0xff09, "escape": 0xff1b, "space": 0x0020,
	"delete": 0xff08, "forwarddelete": 0xffff,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54,
	"home": 0xff50, "end": 0xff57, "pageup": 0xff55, "pagedown": 0xff56,
	"insert": 0xff63, "capslock": 0xffe5, "menu": 0xff67,
}

// Modifier keysyms. On Linux "command" is Control: the shortcuts a model
// knows from macOS (command+c, command+s) are control shortcuts here.
var modifierKeysyms = map[string]uint32{
	"command": 0xffe3, // Control_L
	"control": 0xffe3, // Control_L
	"option":  0xffe9, // Alt_L
	"shift":   0xffe1, // Shift_L
}

const keysymF1 = 0xffbe

// keyKeysym returns the keysym of a normalised key name.
func keyKeysym(key string) (uint32, bool) {
	if k, ok := namedKeysyms[key]; ok {
		return k, true
	}
	if len(key) >= 2 && key[0] == 'f' {
		if n, err := strconv.Atoi(key[1:]); err == nil && n >= 1 && n <= 35 {
			return keysymF1 + uint32(n-1), true
		}
	}
	r := []rune(key)
	if len(r) == 1 {
		return runeKeysym(r[0]), true
	}
	return 0, false
}

// runeKeysym returns the keysym that types r: Latin-1 characters are their
// own keysyms, every other character has a Unicode keysym (0x01000000 + code
// point), and control characters map to their keys.
func runeKeysym(r rune) uint32 {
	switch r {
	case '\n', '\r':
		return 0xff0d // Return
	case '\t':
		return 0xff09 // Tab
	case '\b':
		return 0xff08 // BackSpace
	case 0x1b:
		return 0xff1b // Escape
	}
	if (r >= 0x20 && r <= 0x7e) || (r >= 0xa0 && r <= 0xff) {
		return uint32(r)
	}
	return 0x01000000 | uint32(r)
}
