package shortcut

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string][2]string{
		"ctrl+shift+escape": {"Ctrl+Shift+Esc", "⌃⇧⎋"},
		"cmd+shift+escape":  {"Cmd+Shift+Esc", "⇧⌘⎋"},
		"Alt+Ctrl+K":        {"Option+Ctrl+K", "⌃⌥K"},
		"ctrl+shift+esc":    {"Ctrl+Shift+Esc", "⌃⇧⎋"},
	} {
		sc, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := sc.Symbols(false); got != want[0] {
			t.Errorf("%q as text = %q, want %q", in, got, want[0])
		}
		if got := sc.Symbols(true); got != want[1] {
			t.Errorf("%q as symbols = %q, want %q", in, got, want[1])
		}
	}
	for _, bad := range []string{"", "escape", "ctrl+", "hyper+k", "ctrl+ctrl+k", "ctrl+shift+banana"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestMacKeyCodes answers issue 16.8 (backspace had no macOS key code, and
// "delete" was bound to the backspace key): every key a shortcut may name
// has a macOS code, and the codes agree with the Key constants of the
// pinned golang.design/x/hotkey (Carbon's kVK_* values).
func TestMacKeyCodes(t *testing.T) {
	for k := range X11Keysyms {
		if _, ok := MacKeyCodes[k]; !ok {
			t.Errorf("key %q has no macOS key code", k)
		}
	}
	for k := range MacKeyCodes {
		if _, ok := X11Keysyms[k]; !ok {
			t.Errorf("macOS key %q is not a shortcut key", k)
		}
	}
	if MacKeyCodes["backspace"] != 0x33 || MacKeyCodes["delete"] != 0x75 {
		t.Errorf("backspace = %#x (want kVK_Delete 0x33), delete = %#x (want kVK_ForwardDelete 0x75)", MacKeyCodes["backspace"], MacKeyCodes["delete"])
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.design/x/hotkey").Output()
	if err != nil {
		t.Fatalf("find hotkey: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "hotkey_darwin.go"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]uint64{}
	for _, m := range regexp.MustCompile(`(?m)^\s*Key(\w+)\s+Key = (0x[0-9A-Fa-f]+|\d+)`).FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.ParseUint(m[2], 0, 8)
		if err != nil {
			t.Fatal(err)
		}
		consts[strings.ToLower(m[1])] = v
	}
	if len(consts) < 50 {
		t.Fatalf("read only %d key constants from hotkey", len(consts))
	}
	checked := 0
	for name, code := range MacKeyCodes {
		hk := name
		if name == "backspace" {
			hk = "delete" // hotkey's KeyDelete is kVK_Delete, the backspace key
		}
		want, ok := consts[hk]
		if name == "delete" || !ok {
			continue // forward delete: hotkey has no constant
		}
		checked++
		if uint64(code) != want {
			t.Errorf("%s = %#x, hotkey says %#x", name, code, want)
		}
	}
	if checked < len(MacKeyCodes)-1 {
		t.Errorf("checked %d of %d codes against hotkey", checked, len(MacKeyCodes))
	}
}

// TestShortcutsMacOSWillNotRegister: macOS 15 refuses global shortcuts
// whose only modifiers are Option or Option+Shift, so Parse (and with it
// Settings) refuses them, saying why; Option with Cmd or Ctrl is fine.
func TestShortcutsMacOSWillNotRegister(t *testing.T) {
	for _, bad := range []string{"option+k", "alt+escape", "option+shift+k", "shift+option+f12", "Alt+Shift+Space"} {
		_, err := Parse(bad)
		if err == nil || !strings.Contains(err.Error(), "macOS 15") || !strings.Contains(err.Error(), "Option or Option+Shift") {
			t.Errorf("Parse(%q) = %v, want it refused because macOS 15 will not register it", bad, err)
		}
	}
	for _, good := range []string{"cmd+shift+escape", "ctrl+option+k", "cmd+option+shift+k", "ctrl+shift+escape", "shift+f12", "cmd+option+escape"} {
		if _, err := Parse(good); err != nil {
			t.Errorf("Parse(%q): %v", good, err)
		}
	}
}
