package linux

import (
	"context"
	"math"
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// X pointer buttons; 4-7 are the scroll wheel's up, down, left and right.
var buttons = map[string]byte{protocol.ButtonLeft: 1, protocol.ButtonMiddle: 2, protocol.ButtonRight: 3}

const (
	scrollUp, scrollDown, scrollLeft, scrollRight = 4, 5, 6, 7
	// dragSteps is how many intermediate motions a drag makes, so that
	// toolkits see a movement and not a jump.
	dragSteps = 8
)

func point(v float64) int16 { return int16(math.Round(v)) }

func (d *Driver) motion(x, y float64) {
	xtest.FakeInput(d.conn, xproto.MotionNotify, 0, 0, d.root, point(x), point(y), 0)
}

func (d *Driver) button(press bool, b byte) {
	typ := byte(xproto.ButtonRelease)
	if press {
		typ = xproto.ButtonPress
	}
	xtest.FakeInput(d.conn, typ, b, 0, d.root, 0, 0, 0)
}

// MouseMove implements server.Driver.
func (d *Driver) MouseMove(ctx context.Context, x, y float64) error {
	d.motion(x, y)
	return d.posted()
}

// holding presses the keys of modifiers, posts act's input and releases
// the keys in reverse order, whatever act did.
func (d *Driver) holding(modifiers []string, act func()) error {
	codes, err := d.kb.modifierCodes(modifiers)
	if err != nil {
		return err
	}
	for _, c := range codes {
		d.kb.key(true, c)
	}
	defer func() {
		for i := len(codes) - 1; i >= 0; i-- {
			d.kb.key(false, codes[i])
		}
	}()
	act()
	return nil
}

// MouseClick implements server.Driver.
func (d *Driver) MouseClick(ctx context.Context, x, y float64, button string, count int, modifiers []string) error {
	b := buttons[button]
	err := d.holding(modifiers, func() {
		d.motion(x, y)
		for range count {
			d.button(true, b)
			d.button(false, b)
		}
	})
	if err != nil {
		return err
	}
	return d.posted()
}

// MouseButton implements server.Driver: the X server keeps the button
// down, so later motion is motion with it held (a drag).
func (d *Driver) MouseButton(ctx context.Context, button string, down bool) error {
	d.button(down, buttons[button])
	return d.posted()
}

// CursorPosition implements server.Driver: the pointer on the root window.
func (d *Driver) CursorPosition(ctx context.Context) (protocol.CursorPosition, error) {
	r, err := xproto.QueryPointer(d.conn, d.root).Reply()
	if err != nil {
		return protocol.CursorPosition{}, protocol.Errorf(protocol.CodeUnavailable, "X server: query the pointer: %v", err)
	}
	return protocol.CursorPosition{X: float64(r.RootX), Y: float64(r.RootY)}, nil
}

// MouseDrag implements server.Driver: press at the start, move in steps,
// release at the end.
func (d *Driver) MouseDrag(ctx context.Context, p protocol.DragParams) error {
	d.motion(p.FromX, p.FromY)
	d.button(true, 1)
	if err := d.sync(); err != nil {
		return err
	}
	for i := 1; i <= dragSteps; i++ {
		f := float64(i) / dragSteps
		d.motion(p.FromX+(p.ToX-p.FromX)*f, p.FromY+(p.ToY-p.FromY)*f)
		if err := d.sync(); err != nil {
			return err
		}
		// Toolkits start a drag after the pointer moves while pressed;
		// give their event loops a moment to see each step.
		select {
		case <-ctx.Done():
			d.button(false, 1)
			d.sync()
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	d.button(false, 1)
	return d.posted()
}

// Scroll implements server.Driver: one wheel click per line.
func (d *Driver) Scroll(ctx context.Context, p protocol.ScrollParams) error {
	clicks := func(delta float64, neg, pos byte) {
		n := int(math.Round(math.Abs(delta)))
		if n == 0 && delta != 0 {
			n = 1
		}
		b := pos
		if delta < 0 {
			b = neg
		}
		for range n {
			d.button(true, b)
			d.button(false, b)
		}
	}
	err := d.holding(p.Modifiers, func() {
		d.motion(p.X, p.Y)
		clicks(p.DeltaY, scrollUp, scrollDown)
		clicks(p.DeltaX, scrollLeft, scrollRight)
	})
	if err != nil {
		return err
	}
	return d.posted()
}
