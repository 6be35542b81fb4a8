package guest

import (
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestClicksLandExactly: clicks arrive at a GTK client at exactly the point
// asked for, with the right button, and double and triple clicks are seen as
// such by the toolkit; scrolling arrives as wheel events.
func TestClicksLandExactly(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "clicks")

	for _, p := range [][2]float64{{0, 0}, {10, 10}, {640, 400}, {1279, 799}, {333, 177}} {
		must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: p[0], Y: p[1]})
		e := app.wait(5*time.Second, "a press", func(e event) bool { return e.Event == "press" })
		if e.X != p[0] || e.Y != p[1] || e.Button != 1 || e.Kind != "single" {
			t.Errorf("click at (%g, %g) arrived as %+v", p[0], p[1], e)
		}
	}
	app.drain()

	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: 200, Y: 150, Button: "right"})
	if e := app.wait(5*time.Second, "a right press", func(e event) bool { return e.Event == "press" }); e.Button != 3 || e.X != 200 || e.Y != 150 {
		t.Errorf("right click arrived as %+v", e)
	}
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: 210, Y: 150, Button: "middle"})
	if e := app.wait(5*time.Second, "a middle press", func(e event) bool { return e.Event == "press" }); e.Button != 2 {
		t.Errorf("middle click arrived as %+v", e)
	}
	app.drain()
	time.Sleep(500 * time.Millisecond) // beyond the double-click time of the previous clicks

	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: 500, Y: 300, ClickType: "double"})
	e := app.wait(5*time.Second, "a double click", func(e event) bool { return e.Kind == "double" })
	if e.X != 500 || e.Y != 300 || e.Button != 1 {
		t.Errorf("double click arrived as %+v", e)
	}
	app.drain()
	time.Sleep(500 * time.Millisecond)
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: 520, Y: 300, ClickType: "triple"})
	app.wait(5*time.Second, "a triple click", func(e event) bool { return e.Kind == "triple" && e.X == 520 })
	app.drain()

	// A drag presses at the start, moves with the button held, releases at the end.
	must[protocol.Empty](a, protocol.MethodMouseDrag, protocol.DragParams{FromX: 100, FromY: 120, ToX: 600, ToY: 420})
	if e := app.wait(5*time.Second, "the drag's press", func(e event) bool { return e.Event == "press" }); e.X != 100 || e.Y != 120 {
		t.Errorf("drag pressed at (%g, %g), want (100, 120)", e.X, e.Y)
	}
	app.wait(5*time.Second, "motion with the button held", func(e event) bool { return e.Event == "drag-motion" && e.X > 100 && e.X < 600 })
	if e := app.wait(5*time.Second, "the drag's release", func(e event) bool { return e.Event == "release" }); e.X != 600 || e.Y != 420 || e.Button != 1 {
		t.Errorf("drag released as %+v, want button 1 at (600, 420)", e)
	}
	app.drain()

	must[protocol.Empty](a, protocol.MethodScroll, protocol.ScrollParams{X: 400, Y: 400, DeltaY: 3})
	for range 3 {
		if e := app.wait(5*time.Second, "scroll down", func(e event) bool { return e.Event == "scroll" }); e.Direction != "down" || e.X != 400 {
			t.Errorf("scroll arrived as %+v", e)
		}
	}
	must[protocol.Empty](a, protocol.MethodScroll, protocol.ScrollParams{X: 400, Y: 400, DeltaY: -1})
	if e := app.wait(5*time.Second, "scroll up", func(e event) bool { return e.Event == "scroll" }); e.Direction != "up" {
		t.Errorf("scroll up arrived as %+v", e)
	}
}
