package darwin

/*
#include <stdlib.h>
#include "bridge_darwin.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf16"
	"unsafe"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// Input: the pointer and the keyboard, posted as Quartz events.

// needInput refuses input while macOS would silently drop it. Callers
// note the input for the next capture once it is posted (settle.Input);
// noting it here too starts the frame source while the input is posted.
func (d *Driver) needInput() error {
	if C.hc_accessibility_trusted() == 0 {
		return protocol.Errorf(protocol.CodePermissionDenied, "the guest agent lacks the Accessibility permission, without which macOS ignores its input")
	}
	d.settle.Input()
	return nil
}

// errNoEvent is what a bridge function's -1 means.
func errNoEvent(what string) error {
	return protocol.Errorf(protocol.CodeUnavailable, "%s: macOS made no event (CGEventCreate returned NULL)", what)
}

// MouseMove implements server.Driver: a drag of the button MouseButton
// holds down, if any.
func (d *Driver) MouseMove(ctx context.Context, x, y float64) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	button := C.int(-1)
	if b := d.buttons.dragging(); b != "" {
		button = buttonIndex[b]
	}
	if C.hc_mouse_move_drag(C.double(x), C.double(y), button) != 0 {
		return errNoEvent("move the pointer")
	}
	return nil
}

var buttonIndex = map[string]C.int{protocol.ButtonLeft: 0, protocol.ButtonRight: 1, protocol.ButtonMiddle: 2}

// postKeys posts keyboard events in order; one that macOS cannot make
// does not keep the others (releases, say) from being posted.
func postKeys(events []keyEvent) error {
	failed := 0
	for _, e := range events {
		down := C.int(0)
		if e.down {
			down = 1
		}
		if C.hc_key_event(C.uint16_t(e.code), down, C.uint64_t(e.flags)) != 0 {
			failed++
		}
	}
	if failed > 0 {
		return errNoEvent(fmt.Sprintf("%d of %d key events", failed, len(events)))
	}
	return nil
}

// holding presses the keys of modifiers, runs act with their flags (for
// its events) and releases the keys, whatever act did.
func (d *Driver) holding(modifiers []string, act func(flags uint64) error) (err error) {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	press, release, flags, err := modifierEvents(modifiers)
	if err != nil {
		return protocol.Errorf(protocol.CodeInvalidParams, "%v", err)
	}
	defer func() {
		if rerr := postKeys(release); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if err := postKeys(press); err != nil {
		return err
	}
	return act(flags)
}

// MouseClick implements server.Driver.
func (d *Driver) MouseClick(ctx context.Context, x, y float64, button string, count int, modifiers []string) error {
	return d.holding(modifiers, func(flags uint64) error {
		if C.hc_mouse_click(C.double(x), C.double(y), buttonIndex[button], C.int(count), C.uint64_t(flags)) != 0 {
			return errNoEvent("click")
		}
		return nil
	})
}

// MouseButton implements server.Driver: the press or release at the
// pointer; moves while a button is down are that button's drags.
func (d *Driver) MouseButton(ctx context.Context, button string, down bool) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	cdown := C.int(0)
	if down {
		cdown = 1
	}
	if C.hc_mouse_button(buttonIndex[button], cdown) != 0 {
		return errNoEvent("press or release a mouse button")
	}
	d.buttons.set(button, down)
	return nil
}

// CursorPosition implements server.Driver: the location of an event of
// now (CGEventCreate(NULL)), in points from the main display's top left.
func (d *Driver) CursorPosition(ctx context.Context) (protocol.CursorPosition, error) {
	var x, y C.double
	if C.hc_cursor_position(&x, &y) != 0 {
		return protocol.CursorPosition{}, errNoEvent("read the pointer")
	}
	return protocol.CursorPosition{X: float64(x), Y: float64(y)}, nil
}

// MouseDrag implements server.Driver.
func (d *Driver) MouseDrag(ctx context.Context, p protocol.DragParams) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	C.hc_mouse_drag(C.double(p.FromX), C.double(p.FromY), C.double(p.ToX), C.double(p.ToY), dragSteps)
	return nil
}

// Scroll implements server.Driver.
func (d *Driver) Scroll(ctx context.Context, p protocol.ScrollParams) error {
	return d.holding(p.Modifiers, func(flags uint64) error {
		if C.hc_scroll(C.double(p.X), C.double(p.Y), C.int(lines(p.DeltaX)), C.int(lines(p.DeltaY)), C.uint64_t(flags)) != 0 {
			return errNoEvent("scroll")
		}
		return nil
	})
}

// lines rounds a scroll delta to whole lines, at least one when not zero.
func lines(delta float64) int {
	n := int(delta + 0.5)
	if delta < 0 {
		n = int(delta - 0.5)
	}
	if n == 0 && delta > 0 {
		n = 1
	} else if n == 0 && delta < 0 {
		n = -1
	}
	return n
}

// TypeText implements server.Driver: one key press per character, on the
// key the current keyboard layout types it with (typing.go), carrying
// the character too; a character no key types goes as text alone.
func (d *Driver) TypeText(ctx context.Context, text string) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.InputDrawing(time.Now()) // text typed draws
	table, err := currentLayout()
	if err != nil {
		d.cfg.Log.Warn("typing every character as text", "err", err)
	}
	failed := 0
	for _, s := range typingPlan(text, table) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var units *C.uint16_t
		if len(s.text) > 0 {
			units = (*C.uint16_t)(unsafe.Pointer(&s.text[0]))
		}
		if C.hc_type_key(C.uint16_t(s.code), C.uint64_t(s.flags), units, C.int(len(s.text))) != 0 {
			failed++
		}
	}
	if failed > 0 {
		return errNoEvent(fmt.Sprintf("%d key presses", failed))
	}
	return nil
}

// currentLayout reads what the keys of the current keyboard layout type
// (read anew for each text: the user of a takeover may switch layouts).
func currentLayout() (map[rune]typedKey, error) {
	var chars [C.HC_LAYOUT_KEYS * 2 * C.HC_LAYOUT_UNITS]C.uint16_t
	var lens [C.HC_LAYOUT_KEYS * 2]C.int8_t
	switch C.hc_layout_chars(&chars[0], &lens[0]) {
	case 0:
	case -2:
		return nil, errors.New("the main thread did not read the keyboard layout within 2 s")
	default:
		return nil, errors.New("the keyboard layout has no Unicode ('uchr') data")
	}
	return layoutTable(func(code uint16, shift bool) keyOutput {
		i := int(code) * 2
		if shift {
			i++
		}
		n := int(lens[i])
		if n < 0 {
			return keyOutput{dead: true}
		}
		units := make([]uint16, n)
		for j := range units {
			units[j] = uint16(chars[i*C.HC_LAYOUT_UNITS+j])
		}
		return keyOutput{text: string(utf16.Decode(units))}
	}), nil
}

// keyError turns keyStroke's and keyEvents' errors into protocol errors.
func keyError(err error) error { return protocol.Errorf(keyErrorCode(err), "%v", err) }

// PressKey implements server.Driver. A modifier pressed as a key goes down
// and up as a modifier's key does (flags-changed events).
func (d *Driver) PressKey(ctx context.Context, key string, modifiers []string) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	if server.IsModifierKey(key) {
		press, release, err := keyEvents(key, modifiers)
		if err != nil {
			return keyError(err)
		}
		return errors.Join(postKeys(press), postKeys(release))
	}
	code, flags, ok, err := keyStroke(key, modifiers)
	if err != nil {
		return keyError(err)
	}
	if !ok {
		if len(modifiers) > 0 || len([]rune(key)) != 1 {
			return protocol.Errorf(protocol.CodeUnsupported, "key %q has no key code on the US layout to combine with modifiers", key)
		}
		return d.TypeText(ctx, key)
	}
	C.hc_key(C.uint16_t(code), C.uint64_t(flags))
	return nil
}

// KeyDown implements server.Driver: the modifiers' keys, then the key, as
// a hand presses them; release lets go in reverse order.
func (d *Driver) KeyDown(ctx context.Context, key string, modifiers []string) (func(context.Context) error, error) {
	if err := d.needInput(); err != nil {
		return nil, err
	}
	defer d.settle.Input()
	press, release, err := keyEvents(key, modifiers)
	if err != nil {
		return nil, keyError(err)
	}
	if err := postKeys(press); err != nil {
		return nil, errors.Join(err, postKeys(release))
	}
	return func(context.Context) error {
		defer d.settle.Input()
		return postKeys(release)
	}, nil
}
