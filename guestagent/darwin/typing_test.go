package darwin

import (
	"strings"
	"testing"
	"unicode/utf16"
)

// usLayout is what UCKeyTranslate answers on the US layout, built from the
// key code table (the ANSI US keyboard) and its shifted characters, plus
// the characters a real layout also gives for non-character keys (Return's
// "\r", an arrow's private-use U+F702, the keypad's digits).
func usLayout(code uint16, shift bool) keyOutput {
	for name, c := range keyCodes {
		if c != code {
			continue
		}
		switch {
		case name == "space":
			return keyOutput{text: " "}
		case name == "return":
			return keyOutput{text: "\r"}
		case name == "left":
			return keyOutput{text: "\uF702"}
		case strings.HasPrefix(name, "kp") && len(name) == 3:
			return keyOutput{text: name[2:]}
		case len([]rune(name)) != 1:
			return keyOutput{}
		}
		if !shift {
			return keyOutput{text: name}
		}
		if up := strings.ToUpper(name); up != name {
			return keyOutput{text: up}
		}
		for s, base := range shifted {
			if base == name {
				return keyOutput{text: s}
			}
		}
	}
	return keyOutput{}
}

// germanLayout is QWERTZ: Y and Z change places, ß is where "-" is on the
// US keyboard, "/" is Shift-7, and the key left of Backspace (US "=") is a
// dead key for the acute accent.
func germanLayout(code uint16, shift bool) keyOutput {
	switch {
	case code == keyCodes["y"]:
		return map[bool]keyOutput{false: {text: "z"}, true: {text: "Z"}}[shift]
	case code == keyCodes["z"]:
		return map[bool]keyOutput{false: {text: "y"}, true: {text: "Y"}}[shift]
	case code == keyCodes["-"]:
		return map[bool]keyOutput{false: {text: "ß"}, true: {text: "?"}}[shift]
	case code == keyCodes["7"] && shift:
		return keyOutput{text: "/"}
	case code == keyCodes["/"]:
		return map[bool]keyOutput{false: {text: "-"}, true: {text: "_"}}[shift]
	case code == keyCodes["="]:
		return keyOutput{dead: true}
	}
	return usLayout(code, shift)
}

// typed is what a plan types, as key names and texts for the test's
// messages: "code" or "shift+code", then the text.
func typed(plan []stroke) (codes []uint16, shifts []bool, texts []string) {
	for _, s := range plan {
		codes = append(codes, s.code)
		shifts = append(shifts, s.flags&flagShift != 0)
		texts = append(texts, string(utf16.Decode(s.text)))
	}
	return codes, shifts, texts
}

// TestTypingUsesTheLayoutsKeys answers issue 35.7: a character of the
// layout goes as its own key (apps that read key codes type it), not as
// key code 0 ("a") with text.
func TestTypingUsesTheLayoutsKeys(t *testing.T) {
	us := layoutTable(usLayout)
	plan := typingPlan("Hi, a!", us)
	codes, shifts, texts := typed(plan)
	want := []struct {
		code  uint16
		shift bool
		text  string
	}{
		{keyCodes["h"], true, "H"}, {keyCodes["i"], false, "i"}, {keyCodes[","], false, ","},
		{keyCodes["space"], false, " "}, {keyCodes["a"], false, "a"}, {keyCodes["1"], true, "!"},
	}
	if len(plan) != len(want) {
		t.Fatalf("%d strokes for %q, want %d", len(plan), "Hi, a!", len(want))
	}
	for i, w := range want {
		if codes[i] != w.code || shifts[i] != w.shift || texts[i] != w.text {
			t.Errorf("stroke %d: code %d shift %v text %q; want code %d shift %v text %q", i, codes[i], shifts[i], texts[i], w.code, w.shift, w.text)
		}
	}
}

func TestTypingFollowsTheCurrentLayout(t *testing.T) {
	de := layoutTable(germanLayout)
	codes, shifts, texts := typed(typingPlan("zy/ß", de))
	wantCodes := []uint16{keyCodes["y"], keyCodes["z"], keyCodes["7"], keyCodes["-"]}
	wantShift := []bool{false, false, true, false}
	for i := range wantCodes {
		if codes[i] != wantCodes[i] || shifts[i] != wantShift[i] {
			t.Errorf("%q on QWERTZ: code %d shift %v; want code %d shift %v", texts[i], codes[i], shifts[i], wantCodes[i], wantShift[i])
		}
	}
	// The dead key types nothing by itself: "´" is not its character.
	if k, ok := de['´']; ok {
		t.Errorf("the dead key was taken as the key of ´ (%v)", k)
	}
	if _, ok := de['=']; ok {
		t.Errorf("'=' has a key on this QWERTZ, though its key is dead here")
	}
}

// TestCharactersOffTheLayoutGoAsText: what no key types is sent as text on
// key code 0, the only way to type it.
func TestCharactersOffTheLayoutGoAsText(t *testing.T) {
	us := layoutTable(usLayout)
	for _, s := range []string{"é", "😀", "ж"} {
		plan := typingPlan(s, us)
		if len(plan) != 1 || plan[0].code != unicodeOnlyCode || string(utf16.Decode(plan[0].text)) != s || plan[0].flags != 0 {
			t.Errorf("%q: %+v, want one stroke of key code 0 carrying it", s, plan)
		}
	}
	// No layout (it could not be read): everything goes as text.
	codes, _, texts := typed(typingPlan("ab", nil))
	if codes[0] != unicodeOnlyCode || codes[1] != unicodeOnlyCode || texts[0] != "a" || texts[1] != "b" {
		t.Errorf("without a layout: %v %q", codes, texts)
	}
}

func TestTypingLineBreaksAndTabs(t *testing.T) {
	us := layoutTable(usLayout)
	codes, _, texts := typed(typingPlan("a\r\nb\nc\td", us))
	want := []uint16{keyCodes["a"], keyCodes["return"], keyCodes["b"], keyCodes["return"], keyCodes["c"], keyCodes["tab"], keyCodes["d"]}
	if len(codes) != len(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("codes %v, want %v", codes, want)
		}
	}
	if texts[1] != "" || texts[5] != "" {
		t.Errorf("return and tab carry text %q %q", texts[1], texts[5])
	}
}

// TestLayoutLeavesOutKeysThatDoNotType: Return's "\r", an arrow's
// private-use character and the keypad's digits are not the keys of
// characters (the main row types digits).
func TestLayoutLeavesOutKeysThatDoNotType(t *testing.T) {
	us := layoutTable(usLayout)
	if _, ok := us['\r']; ok {
		t.Error("Return is the key of \\r")
	}
	if _, ok := us['\uF702']; ok {
		t.Error("an arrow key is the key of a private-use character")
	}
	if k := us['1']; k.code != keyCodes["1"] || k.shift {
		t.Errorf("1 is typed with key %d (shift %v), want the main row's %d", k.code, k.shift, keyCodes["1"])
	}
	for r := 'a'; r <= 'z'; r++ {
		if k, ok := us[r]; !ok || k.code != keyCodes[string(r)] || k.shift {
			t.Errorf("%c: %+v %v", r, k, ok)
		}
	}
}
