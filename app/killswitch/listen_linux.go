package killswitch

import (
	"context"
	"errors"
	"fmt"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/core/shortcut"
)

// Listen grabs sc on the X display (empty: $DISPLAY) and calls fire on
// every press until ctx ends. It fails when another client holds the
// shortcut. Presses with Caps Lock or Num Lock on count too.
func Listen(ctx context.Context, display string, sc Shortcut, fire func()) error {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return fmt.Errorf("kill switch: connect to the X display: %w", err)
	}
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	code, err := keycode(conn, shortcut.X11Keysyms[sc.Key])
	if err != nil {
		conn.Close()
		return err
	}
	var mods uint16
	for _, m := range sc.Mods {
		switch m {
		case shortcut.Ctrl:
			mods |= xproto.ModMaskControl
		case shortcut.Shift:
			mods |= xproto.ModMaskShift
		case shortcut.Option:
			mods |= xproto.ModMask1
		case shortcut.Cmd:
			mods |= xproto.ModMask4
		}
	}
	// Lock (Caps Lock) and Mod2 (Num Lock, usually) must not defeat the grab.
	for _, extra := range []uint16{0, xproto.ModMaskLock, xproto.ModMask2, xproto.ModMaskLock | xproto.ModMask2} {
		if err := xproto.GrabKeyChecked(conn, true, root, mods|extra, code, xproto.GrabModeAsync, xproto.GrabModeAsync).Check(); err != nil {
			conn.Close()
			return fmt.Errorf("kill switch: grab %s (is another application using it?): %w", sc.Symbols(false), err)
		}
	}
	for {
		ev, xerr := conn.WaitForEvent()
		if ev == nil && xerr == nil {
			if ctx.Err() != nil {
				return nil
			}
			return errors.New("kill switch: the X connection closed")
		}
		if kp, ok := ev.(xproto.KeyPressEvent); ok && kp.Detail == code && kp.State&^(xproto.ModMaskLock|xproto.ModMask2) == mods {
			fire()
		}
	}
}

// keycode finds the key that produces keysym.
func keycode(conn *xgb.Conn, keysym uint32) (xproto.Keycode, error) {
	setup := xproto.Setup(conn)
	n := int(setup.MaxKeycode-setup.MinKeycode) + 1
	m, err := xproto.GetKeyboardMapping(conn, setup.MinKeycode, byte(n)).Reply()
	if err != nil {
		return 0, fmt.Errorf("kill switch: read the keyboard map: %w", err)
	}
	per := int(m.KeysymsPerKeycode)
	for i := 0; i < n; i++ {
		for j := 0; j < per; j++ {
			if uint32(m.Keysyms[i*per+j]) == keysym {
				return setup.MinKeycode + xproto.Keycode(i), nil
			}
		}
	}
	return 0, fmt.Errorf("kill switch: no key on this keyboard produces keysym %#x", keysym)
}
