package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Named keys every driver supports, besides single printable characters and
// f1-f20. "delete" is the key left of backspace's place on a Mac keyboard
// (erases backwards), "forwarddelete" erases forwards. "printscreen" is
// accepted here and refused by a driver whose OS has no such key (macOS).
var namedKeys = map[string]bool{
	"return": true, "tab": true, "escape": true, "space": true, "delete": true,
	"forwarddelete": true, "left": true, "right": true, "up": true, "down": true,
	"home": true, "end": true, "pageup": true, "pagedown": true, "insert": true,
	"capslock": true, "menu": true, "printscreen": true,
	// The keypad (input.v2).
	"kp0": true, "kp1": true, "kp2": true, "kp3": true, "kp4": true,
	"kp5": true, "kp6": true, "kp7": true, "kp8": true, "kp9": true,
	"kpenter": true, "kpadd": true, "kpsubtract": true, "kpmultiply": true,
	"kpdivide": true, "kpdecimal": true, "kpequal": true,
}

var keyAliases = map[string]string{
	"enter": "return", "esc": "escape", "backspace": "delete", "del": "forwarddelete",
	"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
	"page_up": "pageup", "page_down": "pagedown", "pgup": "pageup", "pgdn": "pagedown",
	"spacebar": "space", " ": "space",
	"print": "printscreen", "prtsc": "printscreen", "prtscn": "printscreen", "print_screen": "printscreen",
	"kpplus": "kpadd", "kpminus": "kpsubtract", "kpequals": "kpequal", "kpperiod": "kpdecimal",
	"kpreturn": "kpenter", "kpasterisk": "kpmultiply", "kpslash": "kpdivide",
}

// IsModifierKey reports whether a normalised key name is a modifier key
// pressed as a key (shift, control, option, command, super).
func IsModifierKey(key string) bool { return modifierKeys[key] }

// modifierKeys are the modifiers that are also keys (fn is not: Linux has
// no such key).
var modifierKeys = map[string]bool{
	protocol.ModShift: true, protocol.ModControl: true, protocol.ModOption: true,
	protocol.ModCommand: true, protocol.ModSuper: true,
}

// NormalizeKey returns the canonical name of a key (lower case; aliases such
// as "enter", "esc", "ctrl" and "kp_enter" resolved), or an invalid-params
// error that names the key and lists the accepted names.
func NormalizeKey(key string) (string, error) {
	if key == "" {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "key is required")
	}
	if len([]rune(key)) == 1 {
		if key == " " {
			return "space", nil
		}
		return strings.ToLower(key), nil
	}
	k := strings.ToLower(key)
	if rest, ok := strings.CutPrefix(k, "kp_"); ok {
		k = "kp" + rest // X keysym spelling: KP_Enter, KP_0
	}
	if a, ok := keyAliases[k]; ok {
		k = a
	}
	if namedKeys[k] {
		return k, nil
	}
	if m, ok := modifierAliases[k]; ok && modifierKeys[m] {
		return m, nil
	}
	var n int
	if _, err := fmt.Sscanf(k, "f%d", &n); err == nil && fmt.Sprintf("f%d", n) == k && n >= 1 && n <= 20 {
		return k, nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidParams, "unknown key %q (use a single character, f1-f20, or one of %s)", key, acceptedKeys)
}

// KeyNames returns the canonical names of the named keys NormalizeKey
// accepts (besides single characters and f1-f20), sorted: every driver
// types each of them, or refuses it in words where its OS has no such key.
func KeyNames() []string {
	names := slices.AppendSeq(slices.Collect(maps.Keys(namedKeys)), maps.Keys(modifierKeys))
	slices.Sort(names)
	return names
}

// acceptedKeys lists the named keys for NormalizeKey's error.
var acceptedKeys = strings.Join(KeyNames(), ", ")

var modifierAliases = map[string]string{
	"command": protocol.ModCommand, "cmd": protocol.ModCommand, "meta": protocol.ModCommand,
	"super": protocol.ModSuper, "win": protocol.ModSuper, "windows": protocol.ModSuper,
	"control": protocol.ModControl, "ctrl": protocol.ModControl,
	"option": protocol.ModOption, "opt": protocol.ModOption, "alt": protocol.ModOption,
	"shift": protocol.ModShift,
	"fn":    protocol.ModFn,
}

// NormalizeModifiers returns the canonical, de-duplicated modifier names, or
// an invalid-params error naming an unknown one.
func NormalizeModifiers(mods []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range mods {
		c, ok := modifierAliases[strings.ToLower(m)]
		if !ok {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "unknown modifier %q (use command, control, option, shift, super or fn)", m)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// normalizeStroke normalises a key and its modifiers; a modifier key held
// with itself as a modifier is pressed once.
func normalizeStroke(key string, mods []string) (string, []string, error) {
	k, err := NormalizeKey(key)
	if err != nil {
		return "", nil, err
	}
	m, err := NormalizeModifiers(mods)
	if err != nil {
		return "", nil, err
	}
	return k, slices.DeleteFunc(m, func(s string) bool { return s == k }), nil
}
