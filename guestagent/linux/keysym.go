package linux

import "strconv"

// X keysyms of the named keys of the protocol (server.NormalizeKey names).
var namedKeysyms = map[string]uint32{
	"return": 0xff0d, "tab": 0xff09, "escape": 0xff1b, "space": 0x0020,
	"delete": 0xff08, "forwarddelete": 0xffff,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54,
	"home": 0xff50, "end": 0xff57, "pageup": 0xff55, "pagedown": 0xff56,
	"insert": 0xff63, "capslock": 0xffe5, "menu": 0xff67,
	"printscreen": 0xff61, // Print
	// The keypad: KP_0..KP_9 and its operators.
	"kp0": 0xffb0, "kp1": 0xffb1, "kp2": 0xffb2, "kp3": 0xffb3, "kp4": 0xffb4,
	"kp5": 0xffb5, "kp6": 0xffb6, "kp7": 0xffb7, "kp8": 0xffb8, "kp9": 0xffb9,
	"kpenter": 0xff8d, "kpadd": 0xffab, "kpsubtract": 0xffad, "kpmultiply": 0xffaa,
	"kpdivide": 0xffaf, "kpdecimal": 0xffae, "kpequal": 0xffbd,
}

// Modifier keysyms, also the keys of the modifier names pressed as keys.
// On Linux "command" is Control: the shortcuts a model knows from macOS
// (command+c, command+s) are control shortcuts here. "super" is the Super
// (Windows) key.
var modifierKeysyms = map[string]uint32{
	"command": 0xffe3, // Control_L
	"control": 0xffe3, // Control_L
	"option":  0xffe9, // Alt_L
	"shift":   0xffe1, // Shift_L
	"super":   0xffeb, // Super_L
}

const keysymF1 = 0xffbe

// keypadKeysym reports whether sym is one of the keypad's (KP_Space to
// KP_Equal, as Xlib's IsKeypadKey).
func keypadKeysym(sym uint32) bool { return sym >= 0xff80 && sym <= 0xffbd }

// keyKeysym returns the keysym of a normalised key name.
func keyKeysym(key string) (uint32, bool) {
	if k, ok := namedKeysyms[key]; ok {
		return k, true
	}
	if k, ok := modifierKeysyms[key]; ok {
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
