package menubar

import (
	"context"
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

// answerPairing approves or denies the pairing in slot i.
func (m *Menu) answerPairing(i int, approve bool) {
	m.mu.Lock()
	code := m.shownPairings[i]
	m.mu.Unlock()
	if code == "" {
		return
	}
	ctx, cancel := m.ctx()
	defer cancel()
	answer, verb := m.cfg.Client.DenyPairing, "deny"
	if approve {
		answer, verb = m.cfg.Client.ApprovePairing, "approve"
	}
	if _, err := answer(ctx, code); err != nil {
		m.cfg.Log.Error("answer pairing", "code", code, "action", verb, "err", err)
		m.notify("", fmt.Sprintf("Could not %s the device with code %s", verb, SpacedCode(code)), err.Error())
	}
	m.refresh()
}

// refreshPairings lists the devices asking to pair, tells of new ones, and
// says whether any waits.
func (m *Menu) refreshPairings(ctx context.Context) bool {
	ps, err := m.cfg.Client.Pairings(ctx)
	if err != nil {
		m.cfg.Log.Debug("read pairings", "err", err)
		return false
	}
	shown := PairingEntries(ps, PairingSlots)
	now := make(map[string]bool, len(ps))
	for _, p := range ps {
		now[p.Code] = true
	}
	m.mu.Lock()
	before := m.asked
	m.asked = now
	for i := range m.shownPairings {
		m.shownPairings[i] = ""
		if i < len(shown) {
			m.shownPairings[i] = shown[i].Code
		}
	}
	m.mu.Unlock()
	for i, p := range m.pairItems {
		if i >= len(shown) {
			p.item.Hide()
			continue
		}
		p.item.SetTitle(shown[i].Label)
		p.item.SetTooltip(shown[i].Tooltip)
		p.item.Show()
	}
	if before != nil {
		for _, n := range PairingNotices(before, ps) {
			m.notify("", n.Title, n.Body) // a click opens the dashboard, which lists it
		}
	}
	return len(ps) > 0
}
