package darwin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// PowerOffCommand shuts the guest down cleanly without the Automation
// permission: root's shutdown through sudo, allowed without a password
// by the sudoers rule templates/macos-15-base/install-agent.sh installs
// (SudoersRule). -n: never wait for a password prompt.
var PowerOffCommand = []string{"sudo", "-n", "/sbin/shutdown", "-h", "now"}

// SudoersRule is the rule that allows PowerOffCommand for user.
func SudoersRule(user string) string {
	return user + " ALL=(root) NOPASSWD: " + strings.Join(PowerOffCommand[2:], " ")
}

// Virtual key codes of the ANSI US keyboard (Carbon's kVK_* constants).
var keyCodes = map[string]uint16{
	"a": 0, "s": 1, "d": 2, "f": 3, "h": 4, "g": 5, "z": 6, "x": 7, "c": 8, "v": 9,
	"b": 11, "q": 12, "w": 13, "e": 14, "r": 15, "y": 16, "t": 17,
	"1": 18, "2": 19, "3": 20, "4": 21, "6": 22, "5": 23, "=": 24, "9": 25, "7": 26,
	"-": 27, "8": 28, "0": 29, "]": 30, "o": 31, "u": 32, "[": 33, "i": 34, "p": 35,
	"l": 37, "j": 38, "'": 39, "k": 40, ";": 41, "\\": 42, ",": 43, "/": 44,
	"n": 45, "m": 46, ".": 47, "`": 50,
	"return": 36, "tab": 48, "space": 49, "delete": 51, "escape": 53,
	"capslock": 57, "forwarddelete": 117, "home": 115, "end": 119,
	"pageup": 116, "pagedown": 121, "left": 123, "right": 124, "down": 125, "up": 126,
	"insert": 114, // the Help key, where Insert sits on PC keyboards
	"menu":   110, // kVK_ContextualMenu
	"f1":     122, "f2": 120, "f3": 99, "f4": 118, "f5": 96, "f6": 97, "f7": 98, "f8": 100,
	"f9": 101, "f10": 109, "f11": 103, "f12": 111, "f13": 105, "f14": 107, "f15": 113,
	"f16": 106, "f17": 64, "f18": 79, "f19": 80, "f20": 90,
	// The keypad (kVK_ANSI_Keypad*).
	"kp0": 0x52, "kp1": 0x53, "kp2": 0x54, "kp3": 0x55, "kp4": 0x56,
	"kp5": 0x57, "kp6": 0x58, "kp7": 0x59, "kp8": 0x5B, "kp9": 0x5C,
	"kpenter": 0x4C, "kpadd": 0x45, "kpsubtract": 0x4E, "kpmultiply": 0x43,
	"kpdivide": 0x4B, "kpdecimal": 0x41, "kpequal": 0x51,
}

// modifierKeyCodes are the virtual key codes of the modifier keys (the
// left ones: kVK_Shift, kVK_Control, kVK_Option, kVK_Command, kVK_Function);
// super is Command on a Mac.
var modifierKeyCodes = map[string]uint16{
	"shift": 0x38, "control": 0x3B, "option": 0x3A, "command": 0x37, "super": 0x37, "fn": 0x3F,
}

// Keys a Mac cannot press: errNoPrintScreen refuses the key a Mac
// keyboard does not have, errNoKeyCode a character with no key on the US
// layout (pressed alone, it is typed as text instead).
var (
	errNoPrintScreen = errors.New("macOS has no Print Screen key: take a screenshot with the screenshot method, or press command+shift+3")
	errNoKeyCode     = errors.New("no key code on the US layout")
)

// keyErrorCode is the protocol code of keyStroke's and keyEvents' errors:
// unsupported for a key a Mac cannot press, invalid params otherwise.
func keyErrorCode(err error) int {
	if errors.Is(err, errNoPrintScreen) || errors.Is(err, errNoKeyCode) {
		return protocol.CodeUnsupported
	}
	return protocol.CodeInvalidParams
}

// shifted maps a character typed with Shift on a US keyboard to its key.
var shifted = map[string]string{
	"!": "1", "@": "2", "#": "3", "$": "4", "%": "5", "^": "6", "&": "7", "*": "8",
	"(": "9", ")": "0", "_": "-", "+": "=", "{": "[", "}": "]", "|": "\\",
	":": ";", "\"": "'", "<": ",", ">": ".", "?": "/", "~": "`",
}

// CGEventFlags of the modifiers, and of keys of the keypad
// (kCGEventFlagMaskNumericPad, which a Mac keyboard sets on them).
const (
	flagShift      = 1 << 17 // kCGEventFlagMaskShift
	flagControl    = 1 << 18 // kCGEventFlagMaskControl
	flagOption     = 1 << 19 // kCGEventFlagMaskAlternate
	flagCommand    = 1 << 20 // kCGEventFlagMaskCommand
	flagNumericPad = 1 << 21 // kCGEventFlagMaskNumericPad
	flagFn         = 1 << 23 // kCGEventFlagMaskSecondaryFn
)

var modifierFlags = map[string]uint64{
	"command": flagCommand, "super": flagCommand, "control": flagControl, "option": flagOption, "shift": flagShift, "fn": flagFn,
}

// keyStroke resolves a normalised key name and modifiers to a virtual key code
// and event flags. ok is false for a character that has no key on the US
// layout: without modifiers it can still be typed as text.
func keyStroke(key string, modifiers []string) (code uint16, flags uint64, ok bool, err error) {
	if key == "printscreen" {
		return 0, 0, false, errNoPrintScreen
	}
	for _, m := range modifiers {
		f, known := modifierFlags[m]
		if !known {
			return 0, 0, false, fmt.Errorf("unknown modifier %q", m)
		}
		flags |= f
	}
	if base, isShifted := shifted[key]; isShifted {
		key = base
		flags |= flagShift
	}
	code, ok = keyCodes[key]
	if strings.HasPrefix(key, "kp") && ok {
		flags |= flagNumericPad
	}
	return code, flags, ok, nil
}

// keyEvent is one keyboard CGEvent: the key code, down or up, and the
// event's flags. CGEventCreateKeyboardEvent makes a modifier key's event a
// flags-changed event.
type keyEvent struct {
	code  uint16
	down  bool
	flags uint64
}

// modifierEvents returns the events that press the keys of modifiers in
// order (each carrying the flags held so far), the flags they hold, and
// the events that release them in reverse order. A modifier whose key is
// already down (command and super) is pressed once.
func modifierEvents(modifiers []string) (press, release []keyEvent, flags uint64, err error) {
	var codes []uint16
	var masks []uint64
	for _, m := range modifiers {
		f, known := modifierFlags[m]
		if !known {
			return nil, nil, 0, fmt.Errorf("unknown modifier %q", m)
		}
		if flags&f != 0 {
			continue
		}
		flags |= f
		codes, masks = append(codes, modifierKeyCodes[m]), append(masks, f)
		press = append(press, keyEvent{code: modifierKeyCodes[m], down: true, flags: flags})
	}
	held := flags
	for i := len(codes) - 1; i >= 0; i-- {
		held &^= masks[i]
		release = append(release, keyEvent{code: codes[i], flags: held})
	}
	return press, release, flags, nil
}

// keyEvents returns the events that press modifiers, then key (with Shift
// for a character typed with it on the US layout), and the events that
// release them in reverse order, as a hand on a Mac keyboard would. A key
// with no key code on the US layout is an error.
func keyEvents(key string, modifiers []string) (press, release []keyEvent, err error) {
	mods := slices.Clone(modifiers)
	code, isModifier := modifierKeyCodes[key]
	var own uint64
	if isModifier {
		own = modifierFlags[key]
	} else {
		c, flags, ok, err := keyStroke(key, nil)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, fmt.Errorf("key %q: %w", key, errNoKeyCode)
		}
		if flags&flagShift != 0 && !slices.Contains(mods, "shift") {
			mods = append(mods, "shift")
		}
		code, own = c, flags&flagNumericPad
	}
	press, release, flags, err := modifierEvents(mods)
	if err != nil {
		return nil, nil, err
	}
	if isModifier && flags&own != 0 {
		return press, release, nil // the key is down already, as a modifier
	}
	press = append(press, keyEvent{code: code, down: true, flags: flags | own})
	up := keyEvent{code: code, flags: flags | own}
	if isModifier {
		up.flags = flags
	}
	return press, append([]keyEvent{up}, release...), nil
}
