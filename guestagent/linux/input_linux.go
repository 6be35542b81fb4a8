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

// MouseClick implements server.Driver.
func (d *Driver) MouseClick(ctx context.Context, x, y float64, button string, count int) error {
	b := buttons[button]
	d.motion(x, y)
	for range count {
		d.button(true, b)
		d.button(false, b)
	}
	return d.posted()
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
	d.motion(p.X, p.Y)
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
	clicks(p.DeltaY, scrollUp, scrollDown)
	clicks(p.DeltaX, scrollLeft, scrollRight)
	return d.posted()
}
