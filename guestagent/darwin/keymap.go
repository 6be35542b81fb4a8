package darwin

import (
	"fmt"
	"strings"
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
}

// shifted maps a character typed with Shift on a US keyboard to its key.
var shifted = map[string]string{
	"!": "1", "@": "2", "#": "3", "$": "4", "%": "5", "^": "6", "&": "7", "*": "8",
	"(": "9", ")": "0", "_": "-", "+": "=", "{": "[", "}": "]", "|": "\\",
	":": ";", "\"": "'", "<": ",", ">": ".", "?": "/", "~": "`",
}

// CGEventFlags of the modifiers.
const (
	flagShift   = 1 << 17 // kCGEventFlagMaskShift
	flagControl = 1 << 18 // kCGEventFlagMaskControl
	flagOption  = 1 << 19 // kCGEventFlagMaskAlternate
	flagCommand = 1 << 20 // kCGEventFlagMaskCommand
	flagFn      = 1 << 23 // kCGEventFlagMaskSecondaryFn
)

var modifierFlags = map[string]uint64{
	"command": flagCommand, "control": flagControl, "option": flagOption, "shift": flagShift, "fn": flagFn,
}

// keyStroke resolves a normalised key name and modifiers to a virtual key code
// and event flags. ok is false for a character that has no key on the US
// layout: without modifiers it can still be typed as text.
func keyStroke(key string, modifiers []string) (code uint16, flags uint64, ok bool, err error) {
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
	return code, flags, ok, nil
}
