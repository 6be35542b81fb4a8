package server

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Named keys every driver supports, besides single printable characters and
// f1-f20. "delete" is the key left of backspace's place on a Mac keyboard
// (erases backwards), "forwarddelete" erases forwards.
var namedKeys = map[string]bool{
	"return": true, "tab": true, "escape": true, "space": true, "delete": true,
	"forwarddelete": true, "left": true, "right": true, "up": true, "down": true,
	"home": true, "end": true, "pageup": true, "pagedown": true, "insert": true,
	"capslock": true, "menu": true,
}

var keyAliases = map[string]string{
	"enter": "return", "esc": "escape", "backspace": "delete", "del": "forwarddelete",
	"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
	"page_up": "pageup", "page_down": "pagedown", "pgup": "pageup", "pgdn": "pagedown",
	"spacebar": "space", " ": "space",
}

// NormalizeKey returns the canonical name of a key (lower case; aliases such
// as "enter" and "esc" resolved), or an invalid-params error naming the key.
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
	if a, ok := keyAliases[k]; ok {
		k = a
	}
	if namedKeys[k] {
		return k, nil
	}
	var n int
	if _, err := fmt.Sscanf(k, "f%d", &n); err == nil && fmt.Sprintf("f%d", n) == k && n >= 1 && n <= 20 {
		return k, nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidParams, "unknown key %q (use a character, f1-f20, or one of return, tab, escape, space, delete, forwarddelete, left, right, up, down, home, end, pageup, pagedown, insert)", key)
}

var modifierAliases = map[string]string{
	"command": protocol.ModCommand, "cmd": protocol.ModCommand, "super": protocol.ModCommand, "meta": protocol.ModCommand, "win": protocol.ModCommand,
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
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "unknown modifier %q (use command, control, option, shift or fn)", m)
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}
