package linux

import "testing"

func TestKeysyms(t *testing.T) {
	for key, want := range map[string]uint32{
		"return": 0xff0d, "a": 'a', "f1": 0xffbe, "f12": 0xffc9, "delete": 0xff08, "space": 0x20, "ö": 0xf6, "✓": 0x01002713,
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
