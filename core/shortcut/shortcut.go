// Package shortcut reads keyboard shortcuts as Settings spell them
// ("cmd+shift+escape"; killSwitchShortcut) and says which ones the kill
// switch can register: Settings validate with Parse, and the menu-bar app
// (app/killswitch) grabs what it returns, with the X11 keysyms and macOS
// key codes of its keys.
package shortcut

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Modifier is a modifier key.
type Modifier string

// Modifiers.
const (
	Cmd    Modifier = "cmd"
	Ctrl   Modifier = "ctrl"
	Shift  Modifier = "shift"
	Option Modifier = "option"
)

// Shortcut is a parsed shortcut.
type Shortcut struct {
	Mods []Modifier
	Key  string // lower case: "escape", "k", "f12"
}

// Parse reads a shortcut such as "ctrl+shift+escape" ("alt" is "option").
// It refuses one that macOS 15 will not register (Registrable).
func Parse(s string) (Shortcut, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "+")
	if len(parts) < 2 {
		return Shortcut{}, fmt.Errorf("shortcut %q: want modifier+...+key, e.g. ctrl+shift+escape", s)
	}
	var sc Shortcut
	seen := map[Modifier]bool{}
	for _, p := range parts[:len(parts)-1] {
		m := Modifier(p)
		if p == "alt" {
			m = Option
		}
		switch m {
		case Cmd, Ctrl, Shift, Option:
		default:
			return Shortcut{}, fmt.Errorf("shortcut %q: unknown modifier %q (cmd, ctrl, shift, option)", s, p)
		}
		if seen[m] {
			return Shortcut{}, fmt.Errorf("shortcut %q: %s given twice", s, m)
		}
		seen[m] = true
		sc.Mods = append(sc.Mods, m)
	}
	sc.Key = parts[len(parts)-1]
	if sc.Key == "esc" {
		sc.Key = "escape"
	}
	if _, ok := X11Keysyms[sc.Key]; !ok {
		return Shortcut{}, fmt.Errorf("shortcut %q: unknown key %q", s, sc.Key)
	}
	if err := sc.Registrable(); err != nil {
		return Shortcut{}, fmt.Errorf("shortcut %q: %w", s, err)
	}
	return sc, nil
}

// Registrable refuses a shortcut whose only modifiers are Option, or
// Option and Shift: macOS 15 no longer registers such global hot keys
// (RegisterEventHotKey fails), so that a program cannot use them to read
// what is typed; the kill switch would silently not be there. It is
// refused on every OS, so that one setting works on each.
func (sc Shortcut) Registrable() error {
	onlyOption := len(sc.Mods) > 0
	for _, m := range sc.Mods {
		if m != Option && m != Shift {
			onlyOption = false
		}
	}
	if onlyOption && slices.Contains(sc.Mods, Option) {
		return errors.New("macOS 15 and later do not register a global shortcut whose only modifiers are Option or Option+Shift (they could be used to read what is typed): add Cmd or Ctrl, e.g. cmd+shift+escape")
	}
	return nil
}

// Symbols is the shortcut as macOS menus show it ("⌘⇧⎋"), or as text
// elsewhere ("Ctrl+Shift+Esc").
func (sc Shortcut) Symbols(mac bool) string {
	if mac {
		sym := map[Modifier]string{Ctrl: "⌃", Option: "⌥", Shift: "⇧", Cmd: "⌘"}
		var b strings.Builder
		for _, m := range []Modifier{Ctrl, Option, Shift, Cmd} { // Apple's order
			for _, have := range sc.Mods {
				if have == m {
					b.WriteString(sym[m])
				}
			}
		}
		if sc.Key == "escape" {
			return b.String() + "⎋"
		}
		return b.String() + strings.ToUpper(sc.Key)
	}
	var parts []string
	for _, m := range sc.Mods {
		parts = append(parts, strings.ToUpper(string(m[:1]))+string(m[1:]))
	}
	key := strings.ToUpper(sc.Key[:1]) + sc.Key[1:]
	if sc.Key == "escape" {
		key = "Esc"
	}
	return strings.Join(append(parts, key), "+")
}

// X11Keysyms maps the key names a shortcut may use to X11 keysyms
// (MacKeyCodes has their macOS virtual key codes). Read-only.
var X11Keysyms = map[string]uint32{
	"escape": 0xff1b, "space": 0x20, "return": 0xff0d, "tab": 0xff09, "delete": 0xffff, "backspace": 0xff08,
	"f1": 0xffbe, "f2": 0xffbf, "f3": 0xffc0, "f4": 0xffc1, "f5": 0xffc2, "f6": 0xffc3,
	"f7": 0xffc4, "f8": 0xffc5, "f9": 0xffc6, "f10": 0xffc7, "f11": 0xffc8, "f12": 0xffc9,
}

// MacKeyCodes maps the key names to macOS virtual key codes (Carbon's
// kVK_* of the ANSI keyboard, as golang.design/x/hotkey takes them).
// "backspace" is kVK_Delete, the key macOS labels delete; "delete" is the
// forward delete key, kVK_ForwardDelete, as the X11 keysyms above have it.
var MacKeyCodes = map[string]uint8{
	"escape": 0x35, "space": 0x31, "return": 0x24, "tab": 0x30, "backspace": 0x33, "delete": 0x75,
	"a": 0x00, "s": 0x01, "d": 0x02, "f": 0x03, "h": 0x04, "g": 0x05, "z": 0x06, "x": 0x07, "c": 0x08, "v": 0x09,
	"b": 0x0b, "q": 0x0c, "w": 0x0d, "e": 0x0e, "r": 0x0f, "y": 0x10, "t": 0x11,
	"1": 0x12, "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "9": 0x19, "7": 0x1a, "8": 0x1c, "0": 0x1d,
	"o": 0x1f, "u": 0x20, "i": 0x22, "p": 0x23, "l": 0x25, "j": 0x26, "k": 0x28, "n": 0x2d, "m": 0x2e,
	"f1": 0x7a, "f2": 0x78, "f3": 0x63, "f4": 0x76, "f5": 0x60, "f6": 0x61, "f7": 0x62, "f8": 0x64,
	"f9": 0x65, "f10": 0x6d, "f11": 0x67, "f12": 0x6f,
}

func init() {
	for c := 'a'; c <= 'z'; c++ {
		X11Keysyms[string(c)] = uint32(c)
	}
	for c := '0'; c <= '9'; c++ {
		X11Keysyms[string(c)] = uint32(c)
	}
}
