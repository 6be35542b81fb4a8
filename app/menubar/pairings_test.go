package menubar

import (
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

func TestPairingEntriesAndNotices(t *testing.T) {
	asked := time.Date(2026, 3, 1, 10, 2, 0, 0, time.Local)
	ps := []wire.Pairing{
		{Code: "123456", DeviceName: "Safari on iOS", UserAgent: "Mozilla/5.0 (iPhone)", Address: "192.168.1.20", CreatedAt: asked},
		{Code: "654321", DeviceName: strings.Repeat("x", 50), UserAgent: strings.Repeat("y", 500), CreatedAt: asked},
		{Code: "111111", DeviceName: "Chrome on Linux", Address: "2001:db8::5"},
		{Code: "222222", DeviceName: "Firefox on Android"},
	}
	es := PairingEntries(ps, PairingSlots)
	if len(es) != PairingSlots {
		t.Fatalf("%d entries for %d pairings; want %d", len(es), len(ps), PairingSlots)
	}
	if es[0].Code != "123456" || es[0].Label != "Pair Safari on iOS? Code 123 456" ||
		es[0].Tooltip != "Asked at 10:02AM from 192.168.1.20 by Mozilla/5.0 (iPhone). Approve only if the device shows this code." {
		t.Fatalf("entry %+v", es[0])
	}
	if n := len([]rune(es[1].Label)); n > 50 || len([]rune(es[1].Tooltip)) > 200 {
		t.Fatalf("a long name and user agent are not cut: %q, %d characters of tooltip", es[1].Label, len([]rune(es[1].Tooltip)))
	}
	// Told once per code: only what was not pending before.
	ns := PairingNotices(map[string]bool{"123456": true, "654321": true}, ps)
	if len(ns) != 2 || ns[0].Title != "Chrome on Linux asks to pair" || !strings.Contains(ns[0].Body, "Code 111 111, from 2001:db8::5.") ||
		!strings.Contains(ns[0].Body, "hivecrew devices approve 111111") {
		t.Fatalf("notices %+v", ns)
	}
	if ns := PairingNotices(map[string]bool{"123456": true, "654321": true, "111111": true, "222222": true}, ps); len(ns) != 0 {
		t.Fatalf("pairings already told were told again: %+v", ns)
	}
}
