package darwin

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

func TestKeyStroke(t *testing.T) {
	for _, c := range []struct {
		key   string
		mods  []string
		code  uint16
		flags uint64
		ok    bool
	}{
		{"a", nil, 0, 0, true},
		{"c", []string{"command"}, 8, flagCommand, true},
		{"return", nil, 36, 0, true},
		{"!", nil, 18, flagShift, true},
		{"z", []string{"command", "shift"}, 6, flagCommand | flagShift, true},
		{"f5", nil, 96, 0, true},
		{"ö", nil, 0, 0, false},
		{"kp5", nil, 0x57, flagNumericPad, true},
		{"c", []string{"super"}, 8, flagCommand, true},
	} {
		code, flags, ok, err := keyStroke(c.key, c.mods)
		if err != nil || code != c.code || flags != c.flags || ok != c.ok {
			t.Errorf("keyStroke(%q, %v) = %d, %#x, %v, %v; want %d, %#x, %v", c.key, c.mods, code, flags, ok, err, c.code, c.flags, c.ok)
		}
	}
	if _, _, _, err := keyStroke("a", []string{"hyper"}); err == nil {
		t.Error("unknown modifier accepted")
	}
}

func TestEveryProtocolKeyHasACode(t *testing.T) {
	for _, k := range []string{"return", "tab", "escape", "space", "delete", "forwarddelete", "left", "right", "up", "down", "home", "end", "pageup", "pagedown", "insert", "capslock", "menu", "f1", "f20", "kp0", "kp9", "kpenter", "kpequal"} {
		if _, ok := keyCodes[k]; !ok {
			t.Errorf("no key code for %q", k)
		}
	}
}

// TestPowerOffNeedsNoAutomation answers issue 16.5: the guest shuts down
// with root's shutdown through sudo, never asking for a password (-n, so a
// missing rule fails at once instead of hanging), and install-agent.sh
// installs exactly the sudoers rule that allows that command and nothing
// more.
func TestPowerOffNeedsNoAutomation(t *testing.T) {
	if strings.Join(PowerOffCommand, " ") != "sudo -n /sbin/shutdown -h now" {
		t.Fatalf("PowerOffCommand = %q", PowerOffCommand)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "templates", "macos-15-base", "install-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^rule="\$\(id -un\) (.*)"$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("install-agent.sh writes no sudoers rule")
	}
	if got, want := "hivecrew "+string(m[1]), SudoersRule("hivecrew"); got != want {
		t.Fatalf("install-agent.sh's rule %q, the agent needs %q", got, want)
	}
	if !strings.Contains(string(script), "/etc/sudoers.d/hivecrew-guestagent") || !strings.Contains(string(script), "visudo -cf") {
		t.Fatal("install-agent.sh does not check and install the rule in /etc/sudoers.d")
	}
}

func TestKeyEvents(t *testing.T) {
	const (
		shift   = 0x38
		command = 0x37
		control = 0x3B
	)
	for _, c := range []struct {
		key            string
		mods           []string
		press, release []keyEvent
	}{
		// A key held with modifiers: each modifier's key down in turn,
		// carrying the flags held so far; released in reverse.
		{"c", []string{"command", "shift"},
			[]keyEvent{{command, true, flagCommand}, {shift, true, flagCommand | flagShift}, {8, true, flagCommand | flagShift}},
			[]keyEvent{{8, false, flagCommand | flagShift}, {shift, false, flagCommand}, {command, false, 0}}},
		// A keypad key carries the numeric pad flag, as a Mac keyboard's does.
		{"kpenter", nil, []keyEvent{{0x4C, true, flagNumericPad}}, []keyEvent{{0x4C, false, flagNumericPad}}},
		{"kp7", []string{"control"},
			[]keyEvent{{control, true, flagControl}, {0x59, true, flagControl | flagNumericPad}},
			[]keyEvent{{0x59, false, flagControl | flagNumericPad}, {control, false, 0}}},
		// A modifier as a key: its own flag while down, none once up.
		{"shift", nil, []keyEvent{{shift, true, flagShift}}, []keyEvent{{shift, false, 0}}},
		{"super", []string{"control"},
			[]keyEvent{{control, true, flagControl}, {command, true, flagControl | flagCommand}},
			[]keyEvent{{command, false, flagControl}, {control, false, 0}}},
		// super is command: one key, pressed once.
		{"command", []string{"super"}, []keyEvent{{command, true, flagCommand}}, []keyEvent{{command, false, 0}}},
		// A shifted character holds Shift.
		{"!", nil, []keyEvent{{shift, true, flagShift}, {18, true, flagShift}}, []keyEvent{{18, false, flagShift}, {shift, false, 0}}},
	} {
		press, release, err := keyEvents(c.key, c.mods)
		if err != nil || !slices.Equal(press, c.press) || !slices.Equal(release, c.release) {
			t.Errorf("keyEvents(%q, %v) =\n  %v\n  %v, %v\nwant\n  %v\n  %v", c.key, c.mods, press, release, err, c.press, c.release)
		}
	}
	for _, bad := range []struct {
		key  string
		mods []string
	}{{"printscreen", nil}, {"ö", nil}, {"a", []string{"hyper"}}} {
		if _, _, err := keyEvents(bad.key, bad.mods); err == nil {
			t.Errorf("keyEvents(%q, %v) has no error", bad.key, bad.mods)
		}
	}
	if _, _, _, err := keyStroke("printscreen", nil); err != errNoPrintScreen || keyErrorCode(err) != protocol.CodeUnsupported {
		t.Errorf("printscreen = %v, want it refused in words as unsupported", err)
	}
	if _, _, err := keyEvents("ö", nil); keyErrorCode(err) != protocol.CodeUnsupported {
		t.Errorf("holding ö = %v, want unsupported", err)
	}
	if _, _, err := keyEvents("a", []string{"hyper"}); keyErrorCode(err) != protocol.CodeInvalidParams {
		t.Errorf("an unknown modifier = %v, want invalid params", err)
	}
}

func TestModifierEventsHoldAndReleaseAll(t *testing.T) {
	press, release, flags, err := modifierEvents([]string{"shift", "option", "super", "command", "fn"})
	if err != nil || flags != flagShift|flagOption|flagCommand|flagFn || len(press) != 4 || len(release) != 4 {
		t.Fatalf("modifierEvents = %v, %v, %#x, %v", press, release, flags, err)
	}
	if last := release[len(release)-1]; last.flags != 0 || last.code != 0x38 {
		t.Errorf("the last release %v does not leave every modifier up", last)
	}
	if p, r, f, err := modifierEvents(nil); p != nil || r != nil || f != 0 || err != nil {
		t.Errorf("no modifiers gave %v %v %#x %v", p, r, f, err)
	}
}

// TestEveryNamedKeyTypes: each named key the protocol accepts has a key
// code on a Mac, except Print Screen, which is refused in words.
func TestEveryNamedKeyTypes(t *testing.T) {
	for _, k := range server.KeyNames() {
		press, _, err := keyEvents(k, nil)
		switch {
		case k == "printscreen":
			if err != errNoPrintScreen {
				t.Errorf("printscreen = %v, want refused", err)
			}
		case err != nil || len(press) == 0:
			t.Errorf("%s has no key events: %v", k, err)
		}
	}
}

func TestButtonsDown(t *testing.T) {
	var b buttonsDown
	if b.dragging() != "" {
		t.Fatal("a move with no button down is a drag")
	}
	b.set("right", true)
	b.set("left", true)
	if got := b.dragging(); got != "left" {
		t.Errorf("with left and right down a move drags %q, want left", got)
	}
	b.set("left", false)
	if got := b.dragging(); got != "right" {
		t.Errorf("with right down a move drags %q", got)
	}
	b.set("right", false)
	if got := b.dragging(); got != "" {
		t.Errorf("after every release a move drags %q", got)
	}
}
