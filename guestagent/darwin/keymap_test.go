package darwin

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	for _, k := range []string{"return", "tab", "escape", "space", "delete", "forwarddelete", "left", "right", "up", "down", "home", "end", "pageup", "pagedown", "insert", "capslock", "menu", "f1", "f20"} {
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
