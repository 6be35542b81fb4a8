package guest

import (
	"context"
	"errors"
	"fmt"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// inputMethods maps the takeover view's event types to guest methods.
var inputMethods = map[string]string{
	"click": protocol.MethodMouseClick, "move": protocol.MethodMouseMove, "drag": protocol.MethodMouseDrag,
	"scroll": protocol.MethodScroll, "type": protocol.MethodKeyboardType, "key": protocol.MethodKeyboardKey,
}

// CheckInputType refuses an event type the takeover view does not send.
func CheckInputType(typ string) error {
	if _, ok := inputMethods[typ]; !ok {
		return errdefs.Invalidf("input type %q: want click, move, drag, scroll, type or key", typ)
	}
	return nil
}

// Input forwards one pointer or keyboard event of the user to the guest.
// Coordinates are guest points inside the screen the guest's hello
// reported; anything else is refused (invalid) before the guest sees it.
func (c *Client) Input(ctx context.Context, in wire.Input) error {
	if err := CheckInputType(in.Type); err != nil {
		return err
	}
	scr := c.Hello().Screen
	inside := func(x, y float64) error {
		if x < 0 || y < 0 || x >= float64(scr.Width) || y >= float64(scr.Height) {
			return errdefs.Invalidf("point (%g, %g) is outside the %dx%d screen", x, y, scr.Width, scr.Height)
		}
		return nil
	}
	var params any
	switch in.Type {
	case "click":
		if err := inside(in.X, in.Y); err != nil {
			return err
		}
		params = protocol.ClickParams{X: in.X, Y: in.Y, Button: or(in.Button, "left"), ClickType: or(in.ClickType, "single")}
	case "move":
		if err := inside(in.X, in.Y); err != nil {
			return err
		}
		params = protocol.PointParams{X: in.X, Y: in.Y}
	case "drag":
		if err := errors.Join(inside(in.X, in.Y), inside(in.ToX, in.ToY)); err != nil {
			return err
		}
		params = protocol.DragParams{FromX: in.X, FromY: in.Y, ToX: in.ToX, ToY: in.ToY}
	case "scroll":
		if err := inside(in.X, in.Y); err != nil {
			return err
		}
		params = protocol.ScrollParams{X: in.X, Y: in.Y, DeltaX: in.DeltaX, DeltaY: in.DeltaY}
	case "type":
		if in.Text == "" {
			return errdefs.Invalidf("type input needs text")
		}
		params = protocol.TypeParams{Text: in.Text}
	case "key":
		if in.Key == "" {
			return errdefs.Invalidf("key input needs key")
		}
		params = protocol.KeyParams{Key: in.Key, Modifiers: in.Modifiers}
	}
	if err := c.Call(ctx, inputMethods[in.Type], params, nil); err != nil {
		return fmt.Errorf("forward %s to the guest: %w", in.Type, err)
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
