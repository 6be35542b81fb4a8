package guest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// X modifier masks as GTK reports them in an event's state.
const (
	maskShift   = 1
	maskControl = 4
	maskMod1    = 8  // Alt
	maskMod4    = 64 // Super
	maskMods    = maskShift | maskControl | maskMod1 | maskMod4
)

func pt(v float64) *float64 { return &v }

// TestInputV2Announced: the Linux guest tells the host it has version 2
// of the input methods.
func TestInputV2Announced(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	hello := must[protocol.HelloResult](a, protocol.MethodHello, helloParams())
	if !slices.Contains(hello.Capabilities, protocol.CapInputV2) {
		t.Fatalf("capabilities %v lack %s", hello.Capabilities, protocol.CapInputV2)
	}
}

// TestModifiersHeldAroundClicksAndScrolls: a GTK client sees a click and
// a scroll with the modifiers asked for held (super is Super, command is
// Control on Linux), and the next plain click with none: they were
// released.
func TestModifiersHeldAroundClicksAndScrolls(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "clicks")
	x := 100.0
	for _, c := range []struct {
		mods []string
		mask uint32
	}{
		{[]string{"shift"}, maskShift},
		{[]string{"control"}, maskControl},
		{[]string{"option"}, maskMod1},
		{[]string{"super"}, maskMod4},
		{[]string{"command"}, maskControl},
		{[]string{"shift", "ctrl"}, maskShift | maskControl},
		{nil, 0},
	} {
		x += 40 // far from the last click: no double click
		must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: x, Y: 200, Modifiers: c.mods})
		e := app.wait(5*time.Second, "a press", func(e event) bool { return e.Event == "press" })
		if e.State&maskMods != c.mask || e.X != x || e.Button != 1 {
			t.Errorf("click with %v arrived as %+v, want state %#x", c.mods, e, c.mask)
		}
	}
	app.drain()
	must[protocol.Empty](a, protocol.MethodScroll, protocol.ScrollParams{X: 400, Y: 400, DeltaY: 1, Modifiers: []string{"control"}})
	if e := app.wait(5*time.Second, "a scroll", func(e event) bool { return e.Event == "scroll" }); e.Direction != "down" || e.State&maskMods != maskControl {
		t.Errorf("control-scroll arrived as %+v", e)
	}
	must[protocol.Empty](a, protocol.MethodScroll, protocol.ScrollParams{X: 400, Y: 400, DeltaY: -1})
	if e := app.wait(5*time.Second, "a scroll", func(e event) bool { return e.Event == "scroll" }); e.Direction != "up" || e.State&maskMods != 0 {
		t.Errorf("plain scroll after a control-scroll arrived as %+v: control was not released", e)
	}
}

// TestMouseDownMoveUpDrags: mouse_down, mouse_move calls and mouse_up
// make a drag a GTK client sees as one (motion with the first button held
// is only reported while it is held), cursor_position reads where the
// pointer went, and after mouse_up motion is plain motion again.
func TestMouseDownMoveUpDrags(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "clicks")

	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: 123, Y: 456})
	if p := must[protocol.CursorPosition](a, protocol.MethodCursorPosition, nil); p != (protocol.CursorPosition{X: 123, Y: 456}) {
		t.Errorf("cursor_position after a move to (123, 456) = %+v", p)
	}

	must[protocol.Empty](a, protocol.MethodMouseDown, protocol.ButtonParams{X: pt(100), Y: pt(150)})
	if e := app.wait(5*time.Second, "the press", func(e event) bool { return e.Event == "press" }); e.X != 100 || e.Y != 150 || e.Button != 1 {
		t.Errorf("mouse_down arrived as %+v, want button 1 at (100, 150)", e)
	}
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: 300, Y: 250})
	if e := app.wait(5*time.Second, "motion with the button held", func(e event) bool { return e.Event == "drag-motion" }); e.X != 300 || e.Y != 250 {
		t.Errorf("drag motion arrived as %+v, want (300, 250)", e)
	}
	if p := must[protocol.CursorPosition](a, protocol.MethodCursorPosition, nil); p != (protocol.CursorPosition{X: 300, Y: 250}) {
		t.Errorf("cursor_position mid-drag = %+v, want (300, 250)", p)
	}
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: 400, Y: 300})
	app.wait(5*time.Second, "more motion with the button held", func(e event) bool { return e.Event == "drag-motion" && e.X == 400 })
	must[protocol.Empty](a, protocol.MethodMouseUp, protocol.ButtonParams{})
	if e := app.wait(5*time.Second, "the release", func(e event) bool { return e.Event == "release" }); e.X != 400 || e.Y != 300 || e.Button != 1 {
		t.Errorf("mouse_up arrived as %+v, want button 1 at (400, 300)", e)
	}
	app.drain()
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: 500, Y: 320})
	select {
	case e := <-app.events:
		t.Errorf("after mouse_up a move arrived as %+v: the button is still held", e)
	case <-time.After(300 * time.Millisecond):
	}

	// The right button, pressed and released at points of their own.
	must[protocol.Empty](a, protocol.MethodMouseDown, protocol.ButtonParams{Button: "right", X: pt(200), Y: pt(210)})
	if e := app.wait(5*time.Second, "the right press", func(e event) bool { return e.Event == "press" }); e.Button != 3 || e.X != 200 || e.Y != 210 {
		t.Errorf("right mouse_down arrived as %+v", e)
	}
	must[protocol.Empty](a, protocol.MethodMouseUp, protocol.ButtonParams{Button: "right", X: pt(220), Y: pt(230)})
	if e := app.wait(5*time.Second, "the right release", func(e event) bool { return e.Event == "release" }); e.Button != 3 || e.X != 220 || e.Y != 230 {
		t.Errorf("right mouse_up arrived as %+v", e)
	}
}

// TestDragSelectsText: the press, moves and release of separate calls
// select text in a GTK entry the way a hand would: the selection grows
// with the pointer, and copying it puts it on the clipboard.
func TestDragSelectsText(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "form")
	entry := messageEntry(t, a)
	const text = "drag across these words"
	x, y := center(entry)
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: x, Y: y})
	must[protocol.Empty](a, protocol.MethodKeyboardType, protocol.TypeParams{Text: text})
	app.wait(5*time.Second, "the typed text", func(e event) bool { return e.Event == "changed" && e.Text == text })
	must[protocol.Empty](a, protocol.MethodClipboardWrite, protocol.ClipboardText{Text: "not copied"})
	time.Sleep(600 * time.Millisecond) // past the double-click time of the click
	app.drain()

	// From past the end of the text (inside the entry's text area) to its
	// middle, then to its start. (GTK may hold the last motion until the
	// release comes.)
	right, left := entry.Frame.X+entry.Frame.W-20, entry.Frame.X+2
	must[protocol.Empty](a, protocol.MethodMouseDown, protocol.ButtonParams{X: pt(right), Y: pt(y)})
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: entry.Frame.X + 60, Y: y})
	part := app.wait(5*time.Second, "part of the text selected", func(e event) bool { return e.Event == "selection" && e.Text != "" })
	if len(part.Text) >= len(text) || text[len(text)-len(part.Text):] != part.Text {
		t.Errorf("half way the selection is %q, want a proper end of %q", part.Text, text)
	}
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: left, Y: y})
	must[protocol.Empty](a, protocol.MethodMouseUp, protocol.ButtonParams{X: pt(left), Y: pt(y)})
	app.wait(5*time.Second, "the whole text selected", func(e event) bool { return e.Event == "selection" && e.Text == text })

	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "c", Modifiers: []string{"control"}})
	env.WaitFor(5*time.Second, "the dragged selection on the clipboard", func() bool {
		c, _ := call[protocol.ClipboardText](a, protocol.MethodClipboardRead, nil)
		return c.Text == text
	})
}

// keyEvent waits for the key event kind ("key-press", "key-release") of
// the keysym named name.
func (a *app) keyEvent(kind, name string) event {
	a.t.Helper()
	return a.wait(5*time.Second, kind+" of "+name, func(e event) bool { return e.Event == kind && e.Text == name })
}

// startKeys starts the keys client with the pointer over it.
func startKeys(t *testing.T, env *xenv.Env, a *agent) *app {
	t.Helper()
	app := startApp(t, env, "keys")
	must[protocol.Empty](a, protocol.MethodMouseMove, protocol.PointParams{X: 300, Y: 250})
	return app
}

// TestKeypadModifierAndPrintKeys: keypad keys arrive as the keypad's
// keysyms, modifier names pressed as keys as those keys, super as a
// modifier as Super, and printscreen as Print. (No window manager: openbox
// would take Print for itself.)
func TestKeypadModifierAndPrintKeys(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	a := startAgent(t, env)
	app := startKeys(t, env, a)
	for key, sym := range map[string]string{
		"kp0": "KP_0", "kp5": "KP_5", "kp9": "KP_9", "KP_Enter": "KP_Enter", "kpadd": "KP_Add",
		"kpsubtract": "KP_Subtract", "kpmultiply": "KP_Multiply", "kpdivide": "KP_Divide",
		"kpdecimal": "KP_Decimal", "kpequal": "KP_Equal",
		"shift": "Shift_L", "control": "Control_L", "option": "Alt_L", "super": "Super_L", "command": "Control_L",
		"printscreen": "Print",
	} {
		must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: key})
		app.keyEvent("key-press", sym)
		app.keyEvent("key-release", sym)
		app.drain()
	}
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "k", Modifiers: []string{"super"}})
	if e := app.keyEvent("key-press", "k"); e.State&maskMods != maskMod4 {
		t.Errorf("super+k arrived with state %#x, want Super (%#x) alone", e.State, maskMod4)
	}
	app.drain()
	if _, err := call[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "numlock"}); codeOf(err) != protocol.CodeInvalidParams {
		t.Errorf("an unknown key = %v, want invalid params", err)
	}
}

// TestHoldKey: hold_key holds the key as long as asked (by the X server's
// clock), with its modifiers, and leaves nothing down.
func TestHoldKey(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	a := startAgent(t, env)
	app := startKeys(t, env, a)

	start := time.Now()
	must[protocol.Empty](a, protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "x", Seconds: 1})
	if took := time.Since(start); took < time.Second || took > 3*time.Second {
		t.Errorf("hold_key of 1 s answered after %s", took)
	}
	press := app.keyEvent("key-press", "x")
	release := app.keyEvent("key-release", "x")
	if held := release.Time - press.Time; held < 980 || held > 1500 {
		t.Errorf("x was held %d ms, want 1000", held)
	}
	app.drain()

	must[protocol.Empty](a, protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Modifiers: []string{"control"}, Seconds: 0.3})
	if e := app.keyEvent("key-press", "a"); e.State&maskMods != maskControl {
		t.Errorf("control held a arrived with state %#x", e.State)
	}
	app.keyEvent("key-release", "a")
	app.keyEvent("key-release", "Control_L")
	app.drain()
	assertNothingHeld(t, a, app)
}

// assertNothingHeld types b and checks that no modifier is down.
func assertNothingHeld(t *testing.T, a *agent, app *app) {
	t.Helper()
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "b"})
	if e := app.keyEvent("key-press", "b"); e.State&maskMods != 0 {
		t.Errorf("b arrived with state %#x: a modifier was left down", e.State)
	}
	app.keyEvent("key-release", "b")
}

// TestHoldKeyReleasedOnCancelAndDrop: the host cancelling a hold_key
// ($/cancelRequest, sent by the host's own client when the call's context
// ends) releases the key at once, and so does a connection that drops.
func TestHoldKeyReleasedOnCancelAndDrop(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	a := startAgent(t, env)
	app := startKeys(t, env, a)

	host, err := guest.Connect(context.Background(), guest.Config{
		Dial: func(ctx context.Context) (net.Conn, error) { return (&net.Dialer{}).DialContext(ctx, "unix", a.sock) },
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Key:  guest.FixedKey(agentKey, true),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- host.Call(ctx, protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "y", Modifiers: []string{"shift"}, Seconds: 30}, nil)
	}()
	app.keyEvent("key-press", "Y")
	cancel()
	cancelled := time.Now()
	app.keyEvent("key-release", "Y")
	app.keyEvent("key-release", "Shift_L")
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("the key was released %s after the cancel", d)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled hold_key = %v", err)
	}
	app.drain()
	assertNothingHeld(t, a, app)

	conn, err := net.Dial("unix", a.sock)
	if err != nil {
		t.Fatal(err)
	}
	cli := jrpc2.NewClient(transport.Line(conn, conn), nil)
	go cli.Call(context.Background(), protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "z", Seconds: 30})
	app.keyEvent("key-press", "z")
	cli.Close()
	dropped := time.Now()
	app.keyEvent("key-release", "z")
	if d := time.Since(dropped); d > time.Second {
		t.Errorf("the key was released %s after the connection dropped", d)
	}
	app.drain()
	assertNothingHeld(t, a, app)
}
