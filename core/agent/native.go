package agent

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Native computer actions: the calls of Claude's computer tool and of
// OpenAI's computer-use model (llm.Action), carried out with the guest's
// methods. Points are in the pixels of the declared display, the size of
// every screenshot the model is shown (llm.DisplayFor), and are mapped to
// the guest's points as a function tool's are (coords.go): a point off
// the display is refused, not moved to its edge. Each action is gated by
// the permission of the function tool that does the same (nativeGate),
// and a call the provider raised safety checks on waits for the user's
// approval of each, whatever the policy: nothing acknowledges a check by
// itself.
//
// What no gate here stops: a click or a key goes to whatever is in front.
// An agent allowed to type types into a terminal, an interpreter or an
// app's macro editor as readily as into a text field, if one is on the
// screen. The terminal gate (terminal.go) keeps the tools from starting
// such a program without the user's say; it does not follow the keys into
// a program that is already open (docs/security.md, "What a permission means").

// Guest methods of input.v2 (guestagent/protocol/PROTOCOL.md).
const (
	methodMouseDown      = protocol.MethodMouseDown
	methodMouseUp        = protocol.MethodMouseUp
	methodHoldKey        = protocol.MethodHoldKey
	methodCursorPosition = protocol.MethodCursorPosition
)

// needsV2 refuses, in words, what a guest without input.v2 (an older
// guest agent) cannot do.
func (r *Runner) needsV2(what string) error {
	if slices.Contains(r.cfg.Guest.Hello().Capabilities, protocol.CapInputV2) {
		return nil
	}
	return fmt.Errorf("%s is not available: this VM's guest agent is older than Hivecrew's native computer actions (rebuild the template to update it)", what)
}

// v2Key says a combination uses a key or modifier of input.v2.
func v2Key(c keyCombo) bool {
	return strings.HasPrefix(c.key, "kp") && len(c.key) > 2 || c.key == "printscreen" || slices.Contains(c.mods, modSuper) ||
		slices.Contains([]string{"control", "shift", "option", "command", "super"}, c.key)
}

// nativeGate is the permission that gates an action: the function tool's
// that does the same.
func nativeGate(a *llm.Action) string {
	switch a.Kind {
	case llm.ActClick, llm.ActMouseDown, llm.ActMouseUp:
		return protocol.MethodMouseClick
	case llm.ActDrag:
		return protocol.MethodMouseDrag
	case llm.ActMove:
		return protocol.MethodMouseMove
	case llm.ActScroll:
		return protocol.MethodScroll
	case llm.ActKey, llm.ActHoldKey:
		return protocol.MethodKeyboardKey
	case llm.ActType:
		return protocol.MethodKeyboardType
	case llm.ActWait:
		return protocol.MethodWait
	}
	return "screenshot" // screenshot, zoom, cursor_position: looking
}

// describeNative says a native call in words, as the user reads it.
func describeNative(call llm.ToolCall) string {
	a := call.Action
	if a == nil {
		return "computer action (unreadable: " + truncate(call.Invalid, 100) + ")"
	}
	at := func(p *llm.Point) string {
		if p == nil {
			return "where the pointer is"
		}
		return fmt.Sprintf("at (%g, %g)", math.Round(p.X), math.Round(p.Y))
	}
	holding := ""
	if len(a.Hold) > 0 {
		holding = " holding " + strings.Join(a.Hold, "+")
	}
	switch a.Kind {
	case llm.ActClick:
		verb := map[int]string{1: "click", 2: "double-click", 3: "triple-click"}[a.Clicks]
		if a.Button != "left" {
			verb = a.Button + "-" + verb
		}
		return verb + " " + at(a.Point) + holding
	case llm.ActMouseDown:
		return "press the " + a.Button + " button " + at(a.Point)
	case llm.ActMouseUp:
		return "release the " + a.Button + " button " + at(a.Point)
	case llm.ActMove:
		return "move the pointer " + strings.TrimPrefix(at(a.Point), "at ") + holding
	case llm.ActDrag:
		from, to := a.Path[0], a.Path[len(a.Path)-1]
		return fmt.Sprintf("drag from (%g, %g) to (%g, %g)%s", math.Round(from.X), math.Round(from.Y), math.Round(to.X), math.Round(to.Y), holding)
	case llm.ActScroll:
		var dirs []string
		if a.ScrollY != 0 {
			dirs = append(dirs, fmt.Sprintf("%s %d", map[bool]string{true: "down", false: "up"}[a.ScrollY > 0], abs(a.ScrollY)))
		}
		if a.ScrollX != 0 {
			dirs = append(dirs, fmt.Sprintf("%s %d", map[bool]string{true: "right", false: "left"}[a.ScrollX > 0], abs(a.ScrollX)))
		}
		return "scroll " + strings.Join(dirs, " and ") + " " + at(a.Point) + holding
	case llm.ActKey:
		return "press " + strings.Join(a.Keys, " ")
	case llm.ActHoldKey:
		return fmt.Sprintf("hold %s for %gs", strings.Join(a.Keys, " "), a.Seconds)
	case llm.ActType:
		return fmt.Sprintf("type %q", truncate(a.Text, 80))
	case llm.ActWait:
		return fmt.Sprintf("wait %gs", a.Seconds)
	case llm.ActScreenshot:
		return "take a screenshot"
	case llm.ActZoom:
		return fmt.Sprintf("zoom into (%g, %g)–(%g, %g)", a.Region[0], a.Region[1], a.Region[2], a.Region[3])
	case llm.ActCursorPosition:
		return "read where the pointer is"
	}
	return a.Kind
}

func abs(n int) int { return max(n, -n) }

// runNative carries out a native call.
func (r *Runner) runNative(ctx context.Context, step int, call llm.ToolCall, m mapping) (outcome, error) {
	if call.Invalid != "" || call.Action == nil {
		return outcome{}, fmt.Errorf("the computer action cannot be read: %s", call.Invalid)
	}
	a := call.Action
	gate := nativeGate(a)
	words := describeNative(call)
	policy := r.task.Policy.For(gate)
	if policy == config.Deny {
		return outcome{}, fmt.Errorf("%s (%s) is not allowed for this task", words, gate)
	}
	var acked []llm.SafetyCheck
	for _, sc := range call.SafetyChecks {
		// The provider's own check: the user's approval, never the
		// policy's, lets it through.
		what := fmt.Sprintf("Safety check on %q: %s", words, checkText(sc))
		r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve? " + what, Details: string(call.Args)})
		ok, _, err := r.ctl.requestPermission(ctx, wire.PermissionSafetyCheck, what)
		if err != nil {
			return outcome{}, err
		}
		if !ok {
			return outcome{}, fmt.Errorf("the user did not approve the action after a safety check (%s); it was not carried out", checkText(sc))
		}
		acked = append(acked, sc)
	}
	if policy == config.Ask && len(acked) == 0 {
		r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve " + words + "?", Details: string(call.Args)})
		ok, _, err := r.ctl.requestPermission(ctx, gate, words)
		if err != nil {
			return outcome{}, err
		}
		if !ok {
			return outcome{}, fmt.Errorf("the user denied %s", words)
		}
	}
	o, err := r.doNative(ctx, step, a, m)
	o.acked, o.ran = acked, err == nil
	return o, err
}

// checkText is a safety check in words.
func checkText(sc llm.SafetyCheck) string {
	msg := sc.Message
	if msg == "" {
		msg = "the provider flagged this action"
	}
	if sc.Code != "" {
		return sc.Code + ": " + msg
	}
	return msg
}

// guestPoint maps a display point to the guest's, refusing one off it.
func guestPoint(what string, p llm.Point, m mapping) (float64, float64, error) {
	if !m.onShot(p.X, p.Y) {
		return 0, 0, fmt.Errorf("%s: (%g, %g) is off the screen: the display is %dx%d pixels, x from 0 to %d and y from 0 to %d",
			what, p.X, p.Y, m.shotW, m.shotH, m.shotW-1, m.shotH-1)
	}
	x, y := m.toGuest(p.X, p.Y)
	return x, y, nil
}

// pointer is where the pointer is, in guest points.
func (r *Runner) pointer(ctx context.Context) (float64, float64, error) {
	if err := r.needsV2("reading where the pointer is"); err != nil {
		return 0, 0, err
	}
	var pos protocol.CursorPosition
	if err := r.cfg.Guest.Call(ctx, methodCursorPosition, struct{}{}, &pos); err != nil {
		return 0, 0, fmt.Errorf("read where the pointer is: %w", err)
	}
	return pos.X, pos.Y, nil
}

// target is an action's point in guest points: its own, or the pointer's.
func (r *Runner) target(ctx context.Context, a *llm.Action, m mapping) (float64, float64, error) {
	if a.Point == nil {
		return r.pointer(ctx)
	}
	return guestPoint(a.Kind, *a.Point, m)
}

// holdMods are the keys held during a pointer action, as modifiers.
func holdMods(keys []string) ([]string, error) {
	var mods []string
	for _, k := range keys {
		m, ok := modifierNames[strings.ToLower(strings.TrimSpace(k))]
		if !ok {
			return nil, fmt.Errorf("%q cannot be held during a pointer action (hold ctrl, shift, alt, super or cmd)", truncate(k, 20))
		}
		mods = append(mods, m)
	}
	return mods, nil
}

var clickTypes = map[int]string{1: "single", 2: "double", 3: "triple"}

// doNative carries out an action on the guest.
func (r *Runner) doNative(ctx context.Context, step int, a *llm.Action, m mapping) (outcome, error) {
	done := outcome{text: "Done."}
	call := func(method string, params any) (outcome, error) {
		return done, r.cfg.Guest.Call(ctx, method, params, nil)
	}
	mods, err := holdMods(a.Hold)
	if err != nil {
		return outcome{}, err
	}
	if len(mods) > 0 {
		if err := r.needsV2("holding keys during a pointer action"); err != nil {
			return outcome{}, err
		}
	}
	switch a.Kind {
	case llm.ActKey:
		for _, text := range a.Keys {
			combos, err := parseKeys(text)
			if err != nil {
				return outcome{}, err
			}
			for _, c := range combos {
				if v2Key(c) {
					if err := r.needsV2("the key " + comboText(c)); err != nil {
						return outcome{}, err
					}
				}
				if err := r.cfg.Guest.Call(ctx, protocol.MethodKeyboardKey, protocol.KeyParams{Key: c.key, Modifiers: c.mods}, nil); err != nil {
					return outcome{}, fmt.Errorf("press %s: %w", comboText(c), err)
				}
			}
		}
		return done, nil
	case llm.ActHoldKey:
		combos, err := parseKeys(strings.Join(a.Keys, " "))
		if err != nil {
			return outcome{}, err
		}
		if len(combos) != 1 {
			return outcome{}, fmt.Errorf("hold_key holds one key combination, not %d", len(combos))
		}
		if err := r.needsV2("holding a key"); err != nil {
			return outcome{}, err
		}
		if a.Seconds <= 0 {
			return done, nil // held for no time: nothing to do
		}
		return call(methodHoldKey, protocol.HoldKeyParams{Key: combos[0].key, Modifiers: combos[0].mods, Seconds: a.Seconds})
	case llm.ActType:
		return call(protocol.MethodKeyboardType, map[string]any{"text": a.Text})
	case llm.ActCursorPosition:
		x, y, err := r.pointer(ctx)
		if err != nil {
			return outcome{}, err
		}
		sx, sy := m.toShot(x, y)
		return outcome{text: fmt.Sprintf("The pointer is at (%d, %d).", int(math.Round(sx)), int(math.Round(sy)))}, nil
	case llm.ActMove:
		if len(mods) > 0 {
			return outcome{}, errors.New("keys cannot be held while the pointer moves: press them with the click or drag that follows")
		}
		x, y, err := guestPoint("move", *a.Point, m)
		if err != nil {
			return outcome{}, err
		}
		return call(protocol.MethodMouseMove, map[string]any{"x": x, "y": y})
	case llm.ActMouseDown, llm.ActMouseUp:
		params := map[string]any{"button": a.Button}
		if a.Point != nil {
			x, y, err := guestPoint(a.Kind, *a.Point, m)
			if err != nil {
				return outcome{}, err
			}
			params["x"], params["y"] = x, y
		}
		method := methodMouseDown
		if a.Kind == llm.ActMouseUp {
			method = methodMouseUp
		}
		if err := r.needsV2("pressing or releasing a mouse button"); err != nil {
			return outcome{}, err
		}
		return call(method, params)
	case llm.ActClick:
		x, y, err := r.target(ctx, a, m)
		if err != nil {
			return outcome{}, err
		}
		params := map[string]any{"x": x, "y": y, "button": a.Button, "clickType": clickTypes[a.Clicks]}
		if len(mods) > 0 {
			params["modifiers"] = mods
		}
		return call(protocol.MethodMouseClick, params)
	case llm.ActDrag:
		if len(mods) > 0 {
			return outcome{}, errors.New("keys cannot be held during a drag")
		}
		pts := make([][2]float64, len(a.Path))
		for i, p := range a.Path {
			x, y, err := guestPoint("drag", p, m)
			if err != nil {
				return outcome{}, err
			}
			pts[i] = [2]float64{x, y}
		}
		if len(pts) == 2 {
			return call(protocol.MethodMouseDrag, protocol.DragParams{FromX: pts[0][0], FromY: pts[0][1], ToX: pts[1][0], ToY: pts[1][1]})
		}
		if err := r.needsV2("a drag along several points"); err != nil {
			return outcome{}, err
		}
		return r.dragPath(ctx, pts)
	case llm.ActScroll:
		x, y, err := r.target(ctx, a, m)
		if err != nil {
			return outcome{}, err
		}
		params := map[string]any{"x": x, "y": y, "deltaX": a.ScrollX, "deltaY": a.ScrollY}
		if len(mods) > 0 {
			params["modifiers"] = mods
		}
		return call(protocol.MethodScroll, params)
	case llm.ActWait:
		return call(protocol.MethodWait, protocol.WaitParams{Seconds: a.Seconds})
	case llm.ActScreenshot:
		// The screen after the turn is shown in its last action's result.
		return outcome{text: "The screenshot shows the screen after this turn's actions."}, nil
	case llm.ActZoom:
		img, err := r.zoom(ctx, step, a.Region, m)
		if err != nil {
			return outcome{}, err
		}
		return outcome{text: fmt.Sprintf("The region, %dx%d pixels:", img.Width, img.Height), image: img}, nil
	}
	return outcome{}, fmt.Errorf("unknown computer action %q", a.Kind)
}

// dragPath drags along several points: press at the first, move through
// the others, release at the last (the button is released however it
// ends).
func (r *Runner) dragPath(ctx context.Context, pts [][2]float64) (outcome, error) {
	if err := r.cfg.Guest.Call(ctx, methodMouseDown, map[string]any{"button": "left", "x": pts[0][0], "y": pts[0][1]}, nil); err != nil {
		return outcome{}, err
	}
	var err error
	for _, p := range pts[1:] {
		if err = r.cfg.Guest.Call(ctx, protocol.MethodMouseMove, map[string]any{"x": p[0], "y": p[1]}, nil); err != nil {
			break
		}
	}
	end := pts[len(pts)-1]
	uerr := r.cfg.Guest.Call(context.WithoutCancel(ctx), methodMouseUp, map[string]any{"button": "left", "x": end[0], "y": end[1]}, nil)
	if err = errors.Join(err, uerr); err != nil {
		return outcome{}, err
	}
	return outcome{text: "Done."}, nil
}

// zoom shows a region of the display at the screen's full resolution,
// fitted in the display's size.
func (r *Runner) zoom(ctx context.Context, step int, region []float64, m mapping) (*llm.Image, error) {
	x0, y0, x1, y1 := region[0], region[1], region[2], region[3]
	if !(x0 < x1 && y0 < y1) || !m.onShot(x0, y0) || x1 > float64(m.shotW) || y1 > float64(m.shotH) {
		return nil, fmt.Errorf("zoom: region [%g, %g, %g, %g] is not a rectangle on the %dx%d display", x0, y0, x1, y1, m.shotW, m.shotH)
	}
	full, err := r.cfg.Guest.Screenshot(ctx, protocol.ScreenshotParams{Format: protocol.FormatPNG})
	if err != nil {
		return nil, err
	}
	if rel, err := r.cfg.Trace.Screenshot(full.Format, full.Data); err == nil {
		r.emit(step, Event{Type: "screenshot", ActivityType: "observation", Summary: fmt.Sprintf("Zoom %dx%d", full.Width, full.Height), Screenshot: rel})
	} else {
		r.traceFailed(err)
	}
	sx, sy := float64(full.Width)/float64(m.shotW), float64(full.Height)/float64(m.shotH)
	src := image.Rect(int(x0*sx), int(y0*sy), int(math.Ceil(x1*sx)), int(math.Ceil(y1*sy)))
	w, h := protocol.FitSize(src.Dx(), src.Dy(), m.shotW, m.shotH)
	if src.Dx() < m.shotW && src.Dy() < m.shotH {
		// Enlarged to the display, as far as its aspect allows.
		scale := min(float64(m.shotW)/float64(src.Dx()), float64(m.shotH)/float64(src.Dy()))
		w, h = max(1, int(float64(src.Dx())*scale)), max(1, int(float64(src.Dy())*scale))
	}
	return llm.ResizedImage(full.Data, src, w, h)
}

// imageRect is an image's bounds.
func imageRect(w, h int) image.Rectangle { return image.Rect(0, 0, w, h) }
