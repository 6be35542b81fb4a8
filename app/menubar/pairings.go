package menubar

import (
	"fmt"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// PairingSlots is how many devices asking to pair the menu lists.
const PairingSlots = 3

// PairingEntry is a device asking to pair, as the menu lists it: its
// entry's label and tooltip, and the code Approve and Deny answer.
type PairingEntry struct {
	Code           string
	Label, Tooltip string
}

// SpacedCode is a six-digit code as people read it: "123 456".
func SpacedCode(code string) string {
	if len(code) != 6 {
		return code
	}
	return code[:3] + " " + code[3:]
}

// PairingEntries are the menu's entries for the pending pairings (oldest
// first), at most slots.
func PairingEntries(ps []wire.Pairing, slots int) []PairingEntry {
	out := make([]PairingEntry, 0, min(len(ps), slots))
	for _, p := range ps[:min(len(ps), slots)] {
		out = append(out, PairingEntry{Code: p.Code,
			Label: fmt.Sprintf("Pair %s? Code %s", cut(p.DeviceName, 30), SpacedCode(p.Code)),
			Tooltip: fmt.Sprintf("Asked at %s from %s by %s. Approve only if the device shows this code.",
				p.CreatedAt.Local().Format(time.Kitchen), p.Address, cut(p.UserAgent, 120))})
	}
	return out
}

// PairingNotices are the notifications of the pairings in now whose code
// was not in before: one per device that asks. They are always shown
// (the user has just asked on the device), whatever notifyEvents says.
func PairingNotices(before map[string]bool, now []wire.Pairing) []Notice {
	var out []Notice
	for _, p := range now {
		if before[p.Code] {
			continue
		}
		out = append(out, Notice{Title: p.DeviceName + " asks to pair",
			Body: fmt.Sprintf("Code %s, from %s. Approve it in the menu, or with `hivecrew devices approve %s`, only if the device shows this code.",
				SpacedCode(p.Code), p.Address, p.Code)})
	}
	return out
}
