package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"Enter": "return", "KP_Enter": "kpenter", "kp_0": "kp0", "KP9": "kp9", "kpplus": "kpadd",
		"KP_Subtract": "kpsubtract", "KP_Multiply": "kpmultiply", "kp_divide": "kpdivide",
		"KP_Decimal": "kpdecimal", "KP_Equal": "kpequal",
		"ctrl": "control", "Shift": "shift", "alt": "option", "cmd": "command", "super": "super",
		"win": "super", "Print": "printscreen", "PrintScreen": "printscreen", "A": "a", " ": "space", "F12": "f12",
	} {
		if got, err := NormalizeKey(in); err != nil || got != want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "hyper", "fn", "kp10", "f21", "f0", "kp_", "numlock"} {
		if _, err := NormalizeKey(bad); codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("NormalizeKey(%q) = %v, want invalid params", bad, err)
		}
	}
	// The error lists what is accepted.
	_, err := NormalizeKey("hyper")
	for _, name := range []string{"kpenter", "kp0", "printscreen", "super", "shift", "pagedown", "f1-f20"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the unknown-key error does not name %s: %v", name, err)
		}
	}
	mods, err := NormalizeModifiers([]string{"Super", "cmd", "win", "meta", "CTRL"})
	if err != nil || strings.Join(mods, ",") != "super,command,control" {
		t.Errorf("NormalizeModifiers = %v, %v; want super (its own modifier), command, control", mods, err)
	}
}

// TestInputParams: the input methods check their params before the driver
// sees them, and pass modifiers, buttons and keys on normalised.
func TestInputParams(t *testing.T) {
	h := newHarness(t, nil)
	x, y := 10.0, 20.0
	for _, c := range []struct {
		method string
		params any
	}{
		{protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Seconds: 0}},
		{protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Seconds: -1}},
		{protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Seconds: 30.5}},
		{protocol.MethodHoldKey, map[string]any{"key": "a"}},
		{protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "hyper", Seconds: 1}},
		{protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Modifiers: []string{"hyper"}, Seconds: 1}},
		{protocol.MethodMouseDown, protocol.ButtonParams{X: &x}},
		{protocol.MethodMouseDown, protocol.ButtonParams{Y: &y}},
		{protocol.MethodMouseDown, protocol.ButtonParams{Button: "fourth"}},
		{protocol.MethodMouseUp, protocol.ButtonParams{X: &x, Y: &[]float64{900}[0]}},
		{protocol.MethodMouseUp, map[string]any{"button": "left", "clickType": "double"}},
		{protocol.MethodMouseClick, protocol.ClickParams{X: 1, Y: 1, Modifiers: []string{"hyper"}}},
		{protocol.MethodScroll, protocol.ScrollParams{X: 1, Y: 1, DeltaY: 1, Modifiers: []string{"capslock"}}},
		{protocol.MethodCursorPosition, map[string]any{"x": 1}},
	} {
		if _, err := call[any](t, h.cli, c.method, c.params); codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("%s %+v = %v, want invalid params", c.method, c.params, err)
		}
	}
	if got := h.drv.inputs(); len(got) != 0 {
		t.Fatalf("refused calls reached the driver: %v", got)
	}

	for _, c := range []struct {
		method string
		params any
	}{
		{protocol.MethodMouseClick, protocol.ClickParams{X: 1, Y: 1, Modifiers: []string{"ctrl", "Shift", "win"}}},
		{protocol.MethodScroll, protocol.ScrollParams{X: 1, Y: 1, DeltaY: 3, Modifiers: []string{"alt"}}},
		{protocol.MethodMouseDown, protocol.ButtonParams{X: &x, Y: &y}},
		{protocol.MethodMouseUp, protocol.ButtonParams{Button: "left"}},
		{protocol.MethodMouseDown, protocol.ButtonParams{Button: "middle"}},
		{protocol.MethodMouseUp, protocol.ButtonParams{Button: "middle", X: &y, Y: &x}},
		{protocol.MethodKeyboardKey, protocol.KeyParams{Key: "KP_Enter"}},
		{protocol.MethodKeyboardKey, protocol.KeyParams{Key: "shift", Modifiers: []string{"shift", "control"}}},
		{protocol.MethodKeyboardKey, protocol.KeyParams{Key: "Print"}},
		{protocol.MethodKeyboardKey, protocol.KeyParams{Key: "e", Modifiers: []string{"super"}}},
	} {
		if _, err := call[any](t, h.cli, c.method, c.params); err != nil {
			t.Fatalf("%s %+v: %v", c.method, c.params, err)
		}
	}
	var got []string
	for _, s := range h.drv.inputs() {
		got = append(got, s.what)
	}
	want := []string{"scroll option+0,3", "move 10,20", "down left", "up left", "down middle", "move 20,10", "up middle"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("driver saw %q, want %q", got, want)
	}
	h.drv.mu.Lock()
	clicks, keys := h.drv.clicks, h.drv.keys
	h.drv.mu.Unlock()
	if strings.Join(clicks, " ") != "control+shift+super+left:1" {
		t.Errorf("clicks %v, want control, shift and super held around a left click", clicks)
	}
	if strings.Join(keys, " ") != "kpenter control+shift printscreen super+e" {
		t.Errorf("keys %v", keys)
	}
	pos, err := call[protocol.CursorPosition](t, h.cli, protocol.MethodCursorPosition, nil)
	if err != nil || pos != (protocol.CursorPosition{X: 20, Y: 10}) {
		t.Errorf("cursor_position = %+v, %v; want where mouse_up moved it (20, 10)", pos, err)
	}
}

// holdTimes returns when the fake driver pressed and released stroke.
func holdTimes(t *testing.T, f *fakeDriver, stroke string) (down, up time.Time) {
	t.Helper()
	for _, s := range f.inputs() {
		switch s.what {
		case "keydown " + stroke:
			down = s.at
		case "keyup " + stroke:
			up = s.at
		}
	}
	return down, up
}

func TestHoldKeyHoldsThenReleases(t *testing.T) {
	h := newHarness(t, nil)
	start := time.Now()
	if _, err := call[any](t, h.cli, protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "KP_4", Modifiers: []string{"ctrl"}, Seconds: 0.3}); err != nil {
		t.Fatal(err)
	}
	down, up := holdTimes(t, h.drv, "control+kp4")
	if down.IsZero() || up.IsZero() {
		t.Fatalf("driver saw %v, want control+kp4 pressed and released", h.drv.inputs())
	}
	if held := up.Sub(down); held < 300*time.Millisecond || held > time.Second {
		t.Errorf("held %s, want 0.3 s", held)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("hold_key of 0.3 s answered after %s", took)
	}
}

// TestHoldKeyReleasedOnCancel: a cancelled hold_key lets go of the key at
// once and answers cancelled.
func TestHoldKeyReleasedOnCancel(t *testing.T) {
	h := newHarness(t, nil)
	cli := h.dial(t)
	defer cli.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cli.Call(context.Background(), protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "a", Seconds: 30})
		done <- transport.FromRPC(err)
	}()
	waitFor(t, "the key pressed", func() bool { d, _ := holdTimes(t, h.drv, "a"); return !d.IsZero() })
	cancelled := time.Now()
	// The first request of this connection has id 1.
	if err := cli.Notify(context.Background(), protocol.NotifyCancelRequest, protocol.CancelParams{ID: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if codeOf(err) != protocol.CodeCancelled {
			t.Fatalf("cancelled hold_key = %v, want cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hold_key went on after $/cancelRequest")
	}
	if _, up := holdTimes(t, h.drv, "a"); up.IsZero() || up.Sub(cancelled) > 500*time.Millisecond {
		t.Fatalf("after the cancel the driver saw %v, want the key released at once", h.drv.inputs())
	}
}

// TestHeldInputReleasedWhenConnectionEnds: a host that loses the guest
// leaves no key and no button down: the hold is released, and so is a
// button its mouse_down pressed; one its mouse_up released is not
// released again.
func TestHeldInputReleasedWhenConnectionEnds(t *testing.T) {
	h := newHarness(t, nil)
	cli := h.dial(t)
	for _, c := range []struct {
		method string
		params any
	}{
		{protocol.MethodMouseDown, protocol.ButtonParams{Button: "right"}},
		{protocol.MethodMouseDown, protocol.ButtonParams{}},
		{protocol.MethodMouseUp, protocol.ButtonParams{}},
	} {
		if _, err := call[any](t, cli, c.method, c.params); err != nil {
			t.Fatal(err)
		}
	}
	go cli.Call(context.Background(), protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "shift", Seconds: 30})
	waitFor(t, "the key pressed", func() bool { d, _ := holdTimes(t, h.drv, "shift"); return !d.IsZero() })
	closed := time.Now()
	cli.Close()
	waitFor(t, "the key released", func() bool { _, u := holdTimes(t, h.drv, "shift"); return !u.IsZero() })
	if _, up := holdTimes(t, h.drv, "shift"); up.Sub(closed) > time.Second {
		t.Errorf("key released %s after the connection ended", up.Sub(closed))
	}
	waitFor(t, "the right button released", func() bool {
		in := h.drv.inputs()
		return len(in) > 0 && in[len(in)-1].what == "up right"
	})
	ups := 0
	for _, s := range h.drv.inputs() {
		if s.what == "up left" {
			ups++
		}
	}
	if ups != 1 {
		t.Errorf("the left button was released %d times, want once (by mouse_up): %v", ups, h.drv.inputs())
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
