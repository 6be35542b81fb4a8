package killswitch

import "testing"

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
