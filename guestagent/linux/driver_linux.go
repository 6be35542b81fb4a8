package linux

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// TypeText implements server.Driver: every character, mapped or not.
func (d *Driver) TypeText(ctx context.Context, text string) error {
	syms := make([]uint32, 0, len(text))
	rs := []rune(text)
	for i, r := range rs {
		if r == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
			continue // CRLF is one Return
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\b' && r != 0x1b {
			return protocol.Errorf(protocol.CodeInvalidParams, "text contains control character %U that has no key", r)
		}
		syms = append(syms, runeKeysym(r))
	}
	sent := time.Now()
	if err := d.kb.typeKeysyms(syms, nil); err != nil {
		return err
	}
	if len(syms) == 0 {
		return d.posted()
	}
	return d.postedText(sent)
}

// keysym returns the keysym of a normalised key name. A modifier key must
// be in the keymap: on a spare keycode it would not modify.
func (d *Driver) keysym(key string) (uint32, error) {
	sym, ok := keyKeysym(key)
	if !ok {
		return 0, protocol.Errorf(protocol.CodeInvalidParams, "unknown key %q", key)
	}
	if server.IsModifierKey(key) {
		if _, err := d.kb.modifierCodes([]string{key}); err != nil {
			return 0, err
		}
	}
	return sym, nil
}

// PressKey implements server.Driver.
func (d *Driver) PressKey(ctx context.Context, key string, modifiers []string) error {
	sym, err := d.keysym(key)
	if err != nil {
		return err
	}
	mods, err := d.kb.modifierCodes(modifiers)
	if err != nil {
		return err
	}
	if err := d.kb.typeKeysyms([]uint32{sym}, mods); err != nil {
		return err
	}
	return d.posted()
}

// KeyDown implements server.Driver: the modifiers' keys, Shift when the
// key's character sits at the Shift level, then the key, released in
// reverse order.
func (d *Driver) KeyDown(ctx context.Context, key string, modifiers []string) (func(context.Context) error, error) {
	sym, err := d.keysym(key)
	if err != nil {
		return nil, err
	}
	codes, err := d.kb.modifierCodes(modifiers)
	if err != nil {
		return nil, err
	}
	st, err := d.kb.hold(sym)
	if err != nil {
		return nil, err
	}
	if st.shift && !slices.Contains(codes, d.kb.shiftKC) {
		codes = append(codes, d.kb.shiftKC)
	}
	if !slices.Contains(codes, st.code) {
		codes = append(codes, st.code)
	}
	for _, c := range codes {
		d.kb.key(true, c)
	}
	release := func(context.Context) error {
		for i := len(codes) - 1; i >= 0; i-- {
			d.kb.key(false, codes[i])
		}
		d.kb.unhold(st.code)
		return d.posted()
	}
	if err := d.posted(); err != nil {
		release(ctx)
		return nil, err
	}
	return release, nil
}

// ClipboardRead implements server.Driver.
func (d *Driver) ClipboardRead(ctx context.Context) (string, error) { return d.clip.read(ctx) }

// ClipboardWrite implements server.Driver.
func (d *Driver) ClipboardWrite(ctx context.Context, text string) error {
	if err := d.clip.write(text); err != nil {
		return err
	}
	return d.sync()
}

// PowerOff implements server.Driver: it runs the configured power-off
// command (a VM template sets one, e.g. "systemctl poweroff"); without one,
// as in a sandbox, the agent's exit is the end of the guest.
func (d *Driver) PowerOff(ctx context.Context) error {
	if len(d.powerOff) == 0 {
		return nil
	}
	if out, err := exec.CommandContext(ctx, d.powerOff[0], d.powerOff[1:]...).CombinedOutput(); err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "power off (%s): %v: %s", strings.Join(d.powerOff, " "), err, out)
	}
	return nil
}
