package agent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Key names of native computer tools. Claude names keys as xdotool does
// (X keysym names joined by "+": "ctrl+s", "Return", "KP_0", "super",
// several combinations separated by spaces pressed one after the other);
// OpenAI's computer-use model names them in capitals ("CTRL", "ENTER",
// "ARROWLEFT"). Both become the guest protocol's key names and modifiers
// (guestagent/protocol/PROTOCOL.md), the same on Linux and macOS guests:
// the guest presses the key its OS has for the name. A name neither knows
// is refused in words, never guessed.

// keyCombo is one combination: a key and the modifiers held with it.
type keyCombo struct {
	key  string
	mods []string
}

// modifierNames map the names of modifier keys to the protocol's
// modifiers. "super" (X's Super, the Windows or command key) is the
// protocol's super, which a macOS guest presses as command; "cmd" and
// "command" name the protocol's command (Control on a Linux guest, as the
// function tools' "command" is).
var modifierNames = map[string]string{
	"ctrl": protocol.ModControl, "control": protocol.ModControl, "control_l": protocol.ModControl, "control_r": protocol.ModControl,
	"shift": protocol.ModShift, "shift_l": protocol.ModShift, "shift_r": protocol.ModShift,
	"alt": protocol.ModOption, "alt_l": protocol.ModOption, "alt_r": protocol.ModOption, "option": protocol.ModOption, "opt": protocol.ModOption,
	"super": modSuper, "super_l": modSuper, "super_r": modSuper, "win": modSuper, "windows": modSuper, "meta": modSuper, "meta_l": modSuper, "meta_r": modSuper,
	"cmd": protocol.ModCommand, "command": protocol.ModCommand,
	"fn": protocol.ModFn,
}

// modSuper is the protocol's super modifier (input.v2).
const modSuper = protocol.ModSuper

// namedKeyNames map X keysym names, and OpenAI's, to the protocol's key
// names, compared without case.
var namedKeyNames = map[string]string{
	"return": "return", "enter": "return", "tab": "tab", "escape": "escape", "esc": "escape",
	"space": "space", "backspace": "delete", "delete": "forwarddelete", "del": "forwarddelete",
	"left": "left", "right": "right", "up": "up", "down": "down",
	"arrowleft": "left", "arrowright": "right", "arrowup": "up", "arrowdown": "down",
	"home": "home", "end": "end", "page_up": "pageup", "prior": "pageup", "pageup": "pageup",
	"page_down": "pagedown", "next": "pagedown", "pagedown": "pagedown",
	"insert": "insert", "caps_lock": "capslock", "capslock": "capslock", "menu": "menu",
	"print": "printscreen", "printscreen": "printscreen",
	"kp_enter": "kpenter", "kp_add": "kpadd", "kp_subtract": "kpsubtract", "kp_multiply": "kpmultiply",
	"kp_divide": "kpdivide", "kp_decimal": "kpdecimal", "kp_equal": "kpequal",
}

// punctuationNames are X keysym names of characters.
var punctuationNames = map[string]string{
	"minus": "-", "plus": "+", "equal": "=", "comma": ",", "period": ".", "slash": "/", "backslash": "\\",
	"semicolon": ";", "apostrophe": "'", "quoteright": "'", "quotedbl": "\"", "grave": "`", "quoteleft": "`",
	"asciitilde": "~", "bracketleft": "[", "bracketright": "]", "braceleft": "{", "braceright": "}",
	"parenleft": "(", "parenright": ")", "exclam": "!", "at": "@", "numbersign": "#", "dollar": "$",
	"percent": "%", "asciicircum": "^", "ampersand": "&", "asterisk": "*", "underscore": "_", "bar": "|",
	"colon": ":", "less": "<", "greater": ">", "question": "?",
}

// modifierKeys are the protocol's names of the modifier keys pressed
// alone (input.v2).
var modifierKeys = map[string]string{
	protocol.ModControl: "control", protocol.ModShift: "shift", protocol.ModOption: "option",
	protocol.ModCommand: "command", modSuper: "super",
}

// parseKeys reads key combinations as a native tool names them: several
// separated by spaces.
func parseKeys(text string) ([]keyCombo, error) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return nil, fmt.Errorf("no key named")
	}
	if len(fields) > 32 {
		return nil, fmt.Errorf("%d key combinations at once: press at most 32", len(fields))
	}
	out := make([]keyCombo, 0, len(fields))
	for _, f := range fields {
		c, err := parseCombo(f)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// parseCombo reads one combination: names joined by "+", the last the key
// (a modifier's name there presses that key alone).
func parseCombo(s string) (keyCombo, error) {
	var names []string
	if rest, ok := strings.CutSuffix(s, "++"); ok {
		// "ctrl++": the plus key.
		names = append(splitPlus(rest), "+")
	} else if s == "+" {
		names = []string{"+"}
	} else if strings.HasSuffix(s, "+") || strings.HasPrefix(s, "+") {
		return keyCombo{}, fmt.Errorf("%q has no key on one side of its +: name one, as in ctrl+s", truncate(s, 40))
	} else {
		names = splitPlus(s)
	}
	if len(names) == 0 {
		return keyCombo{}, fmt.Errorf("no key in %q", truncate(s, 40))
	}
	var c keyCombo
	seen := map[string]bool{}
	for _, n := range names[:len(names)-1] {
		m, ok := modifierNames[strings.ToLower(n)]
		if !ok {
			return keyCombo{}, fmt.Errorf("%q in %q is not a modifier (use ctrl, shift, alt, super, cmd or fn before the key, as in ctrl+s)", truncate(n, 20), truncate(s, 40))
		}
		if !seen[m] {
			seen[m] = true
			c.mods = append(c.mods, m)
		}
	}
	key, shift, err := keyName(names[len(names)-1])
	if err != nil {
		return keyCombo{}, err
	}
	if shift && !seen[protocol.ModShift] {
		c.mods = append(c.mods, protocol.ModShift)
	}
	c.key = key
	return c, nil
}

func splitPlus(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "+") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// keyName is the protocol's name of a key; shift says the name stands for
// the shifted key (xdotool's "A" is shift+a).
func keyName(n string) (key string, shift bool, err error) {
	if utf8.RuneCountInString(n) == 1 {
		r, _ := utf8.DecodeRuneInString(n)
		if r >= 'A' && r <= 'Z' {
			return strings.ToLower(n), true, nil
		}
		return n, false, nil
	}
	l := strings.ToLower(n)
	if k, ok := namedKeyNames[l]; ok {
		return k, false, nil
	}
	if p, ok := punctuationNames[l]; ok {
		return p, false, nil
	}
	if m, ok := modifierNames[l]; ok {
		return modifierKeys[m], false, nil
	}
	if d, ok := strings.CutPrefix(l, "kp_"); ok && len(d) == 1 && d[0] >= '0' && d[0] <= '9' {
		return "kp" + d, false, nil
	}
	if d, ok := strings.CutPrefix(l, "f"); ok {
		if i, err := strconv.Atoi(d); err == nil && i >= 1 && i <= 20 && strconv.Itoa(i) == d {
			return l, false, nil
		}
	}
	return "", false, fmt.Errorf("unknown key %q: name keys as xdotool does (a character, Return, Tab, Escape, BackSpace, Delete, Up, Page_Down, Home, F5, KP_0, ctrl+s)", truncate(n, 40))
}

// comboText is a combination as the user reads it ("ctrl+shift+t").
func comboText(c keyCombo) string {
	return strings.Join(append(append([]string(nil), c.mods...), c.key), "+")
}
