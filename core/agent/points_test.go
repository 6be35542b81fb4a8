package agent

import (
	"encoding/json"
	"testing"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

func TestActionPoint(t *testing.T) {
	m := mapping{shotW: 1024, shotH: 640, screenW: 1280, screenH: 800}
	call := func(name, args string) llm.ToolCall {
		return llm.ToolCall{Name: name, Args: json.RawMessage(args)}
	}
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		call llm.ToolCall
		want *store.EventPoint
	}{
		{call("mouse_click", `{"x":412,"y":310}`), &store.EventPoint{X: 412, Y: 310, Width: 1024, Height: 640}},
		{call("mouse_move", `{"x":0,"y":639.5}`), &store.EventPoint{X: 0, Y: 639.5, Width: 1024, Height: 640}},
		{call("scroll", `{"x":500,"y":20,"deltaY":3}`), &store.EventPoint{X: 500, Y: 20, Width: 1024, Height: 640}},
		{call("mouse_drag", `{"fromX":10,"fromY":20,"toX":700,"toY":0}`), &store.EventPoint{X: 10, Y: 20, ToX: f(700), ToY: f(0), Width: 1024, Height: 640}},
		// No point: another tool, a point off the screenshot (refused),
		// arguments that are not numbers or not JSON.
		{call("keyboard_key", `{"key":"s","modifiers":["control"]}`), nil},
		{call("mouse_click", `{"x":1024,"y":10}`), nil},
		{call("mouse_drag", `{"fromX":10,"fromY":20,"toX":-1,"toY":5}`), nil},
		{call("mouse_click", `{"x":"412","y":310}`), nil},
		{call("mouse_click", `{"x":412`), nil},
	} {
		got := actionPoint(c.call, m)
		if (got == nil) != (c.want == nil) {
			t.Errorf("%s %s: point %+v, want %+v", c.call.Name, c.call.Args, got, c.want)
			continue
		}
		if got == nil {
			continue
		}
		if got.X != c.want.X || got.Y != c.want.Y || got.Width != c.want.Width || got.Height != c.want.Height ||
			(got.ToX == nil) != (c.want.ToX == nil) || (got.ToX != nil && (*got.ToX != *c.want.ToX || *got.ToY != *c.want.ToY)) {
			t.Errorf("%s %s: point %+v, want %+v", c.call.Name, c.call.Args, got, c.want)
		}
	}
	// Without a screenshot there is nothing to aim at.
	if p := actionPoint(call("mouse_click", `{"x":1,"y":1}`), mapping{}); p != nil {
		t.Errorf("no screenshot: point %+v", p)
	}
}
