package linux

import (
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/server"
)

func TestKeysyms(t *testing.T) {
	for key, want := range map[string]uint32{
		"return": 0xff0d, "a": 'a', "f1": 0xffbe, "f12": 0xffc9, "delete": 0xff08, "space": 0x20, "ö": 0xf6, "✓": 0x01002713,
		"kp0": 0xffb0, "kp9": 0xffb9, "kpenter": 0xff8d, "kpadd": 0xffab, "kpsubtract": 0xffad, "kpmultiply": 0xffaa,
		"kpdivide": 0xffaf, "kpdecimal": 0xffae, "kpequal": 0xffbd, "printscreen": 0xff61,
		"shift": 0xffe1, "control": 0xffe3, "command": 0xffe3, "option": 0xffe9, "super": 0xffeb,
	} {
		if got, ok := keyKeysym(key); !ok || got != want {
			t.Errorf("keyKeysym(%q) = %#x, %v; want %#x", key, got, ok, want)
		}
	}
	if _, ok := keyKeysym("hyper"); ok {
		t.Error("an unknown name has a keysym")
	}
	for r, want := range map[rune]uint32{'A': 0x41, '\n': 0xff0d, '\t': 0xff09, 'é': 0xe9, '日': 0x010065e5, '€': 0x010020ac} {
		if got := runeKeysym(r); got != want {
			t.Errorf("runeKeysym(%q) = %#x, want %#x", r, got, want)
		}
	}
}

// TestEveryProtocolKeyHasAKeysym: each named key the protocol accepts types
// on Linux (which has every one of them, Print Screen included).
func TestEveryProtocolKeyHasAKeysym(t *testing.T) {
	for _, k := range server.KeyNames() {
		if _, ok := keyKeysym(k); !ok {
			t.Errorf("no keysym for %q", k)
		}
	}
}

func TestKeypadKeysym(t *testing.T) {
	for _, k := range []string{"kp0", "kp9", "kpenter", "kpadd", "kpsubtract", "kpmultiply", "kpdivide", "kpdecimal", "kpequal"} {
		if sym, _ := keyKeysym(k); !keypadKeysym(sym) {
			t.Errorf("%s (%#x) is not a keypad keysym", k, sym)
		}
	}
	for _, k := range []string{"return", "0", "f1", "home", "shift"} {
		if sym, _ := keyKeysym(k); keypadKeysym(sym) {
			t.Errorf("%s (%#x) is taken for a keypad keysym", k, sym)
		}
	}
}
