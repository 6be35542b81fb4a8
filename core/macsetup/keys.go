package macsetup

import (
	"fmt"
	"strings"
)

// X keysyms of the keys the script presses (RFB sends keysyms). The
// Virtualization framework's console maps Alt to Command and Meta to
// Option (as tart's and lume's clients found).
var keysyms = map[string]uint32{
	"return": 0xff0d, "tab": 0xff09, "escape": 0xff1b, "space": 0x20, "delete": 0xff08,
	"left": 0xff51, "up": 0xff52, "right": 0xff53, "down": 0xff54,
	"shift": 0xffe1, "control": 0xffe3, "command": 0xffe9, "option": 0xffe7,
	"f1": 0xffbe, "f2": 0xffbf, "f5": 0xffc2,
	"q": 'q', "w": 'w', "a": 'a',
}

// shiftedUS are the characters typed with Shift on the US keyboard that
// Setup Assistant starts with (Shift is pressed around them, as Packer's
// VNC driver does).
const shiftedUS = `~!@#$%^&*()_+{}|:"<>?`

// keyEvent is one key going down or up.
type keyEvent struct {
	keysym uint32
	down   bool
}

// chord presses keys in order ("command+space": Command, then Space) and
// releases them in reverse.
func chord(spec string) ([]keyEvent, error) {
	var syms []uint32
	for _, name := range strings.Split(spec, "+") {
		k, ok := keysyms[strings.ToLower(strings.TrimSpace(name))]
		if !ok {
			return nil, fmt.Errorf("no key named %q in %q", name, spec)
		}
		syms = append(syms, k)
	}
	var out []keyEvent
	for _, k := range syms {
		out = append(out, keyEvent{k, true})
	}
	for i := len(syms) - 1; i >= 0; i-- {
		out = append(out, keyEvent{syms[i], false})
	}
	return out, nil
}

// typing is the key events that type text on the US layout: printable
// ASCII, and line breaks as Return. Other characters are an error (the
// script types only what it wrote itself).
func typing(text string) ([]keyEvent, error) {
	var out []keyEvent
	for _, r := range text {
		var sym uint32
		switch {
		case r == '\n':
			sym = keysyms["return"]
		case r == '\t':
			sym = keysyms["tab"]
		case r >= 0x20 && r < 0x7f:
			sym = uint32(r)
		default:
			return nil, fmt.Errorf("cannot type %q on the console", r)
		}
		shift := (r >= 'A' && r <= 'Z') || strings.ContainsRune(shiftedUS, r)
		if shift {
			out = append(out, keyEvent{keysyms["shift"], true})
		}
		out = append(out, keyEvent{sym, true}, keyEvent{sym, false})
		if shift {
			out = append(out, keyEvent{keysyms["shift"], false})
		}
	}
	return out, nil
}
