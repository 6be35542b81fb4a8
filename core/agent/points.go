package agent

import (
	"encoding/json"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// actionPoint is where a pointer tool call (mouse_click, mouse_move,
// scroll at x, y; mouse_drag from fromX, fromY to toX, toY) aims, in the
// pixels of the screenshot the model saw, with that screenshot's size: what
// the agent window and the replay mark on it. Any other call, arguments
// that are not numbers, or a point off the screenshot (which run refuses)
// have none.
func actionPoint(call llm.ToolCall, m mapping) *store.EventPoint {
	if call.Native != "" {
		return nativePoint(call.Action, m)
	}
	pairs := pointArgs[call.Name]
	if len(pairs) == 0 || m.shotW <= 0 || m.shotH <= 0 {
		return nil
	}
	var args map[string]any
	if json.Unmarshal(call.Args, &args) != nil {
		return nil
	}
	var xy []float64
	for _, pair := range pairs {
		x, xok := args[pair[0]].(float64)
		y, yok := args[pair[1]].(float64)
		if !xok || !yok || !m.onShot(x, y) {
			return nil
		}
		xy = append(xy, x, y)
	}
	p := &store.EventPoint{X: xy[0], Y: xy[1], Width: m.shotW, Height: m.shotH}
	if len(xy) == 4 {
		p.ToX, p.ToY = &xy[2], &xy[3]
	}
	return p
}

// nativePoint is where a native action aims, in the display's pixels
// (which are the screenshot's): a click, move, press, release or scroll
// at a point, or a drag's start and end.
func nativePoint(a *llm.Action, m mapping) *store.EventPoint {
	if a == nil || m.shotW <= 0 || m.shotH <= 0 {
		return nil
	}
	switch {
	case len(a.Path) >= 2:
		from, to := a.Path[0], a.Path[len(a.Path)-1]
		if !m.onShot(from.X, from.Y) || !m.onShot(to.X, to.Y) {
			return nil
		}
		return &store.EventPoint{X: from.X, Y: from.Y, ToX: &to.X, ToY: &to.Y, Width: m.shotW, Height: m.shotH}
	case a.Point != nil && m.onShot(a.Point.X, a.Point.Y):
		return &store.EventPoint{X: a.Point.X, Y: a.Point.Y, Width: m.shotW, Height: m.shotH}
	}
	return nil
}
