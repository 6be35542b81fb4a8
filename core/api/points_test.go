package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png"
	"testing"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestActivityEventPoints: the activity of a task whose model clicks and
// drags carries, on each tool_call_start, the point the action aimed at in
// the pixels of the screenshot the model saw, with that screenshot's size
// (the size of the image the preceding screenshot event links); other
// events carry no point.
func TestActivityEventPoints(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.Backend = fake.New(fake.Options{Width: 1440, Height: 900, Scale: 2}) })
	h.addProvider()
	h.llm.Script("[[points]]",
		llmtest.Tool("mouse_click", map[string]any{"x": 412, "y": 310}),
		llmtest.Tool("mouse_drag", map[string]any{"fromX": 10, "fromY": 20, "toX": 700, "toY": 0}),
		llmtest.Tool("keyboard_key", map[string]any{"key": "s", "modifiers": []string{"control"}}),
		llmtest.Text("Clicked, dragged, saved."), llmtest.Verdict(true, "Done."))
	var task struct{ ID string }
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Click and drag [[points]]"}), &task)
	if done := h.waitTask(task.ID, "the end", terminal); done.Status != "completed" {
		t.Fatalf("task ended %s: %s", done.Status, done.StatusReason)
	}

	// The JSON as a client reads it, field names included.
	var act struct {
		Events []struct {
			Type string
			Data map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/activity", nil), &act); err != nil {
		t.Fatal(err)
	}
	var shotW, shotH int
	var points []string
	for _, e := range act.Events {
		if raw, ok := e.Data["screenshot"]; ok {
			var url string
			json.Unmarshal(raw, &url)
			cfg, _, err := image.DecodeConfig(bytes.NewReader(h.expect(200, "GET", url, nil)))
			if err != nil {
				t.Fatalf("screenshot %s: %v", url, err)
			}
			shotW, shotH = cfg.Width, cfg.Height
		}
		raw, ok := e.Data["point"]
		if !ok {
			continue
		}
		if e.Type != "tool_call_start" {
			t.Errorf("a %s event has a point: %s", e.Type, raw)
		}
		var p struct{ Width, Height int }
		json.Unmarshal(raw, &p)
		if p.Width != shotW || p.Height != shotH || shotW == 0 {
			t.Errorf("point %s: size %dx%d, but the screenshot the model saw is %dx%d", raw, p.Width, p.Height, shotW, shotH)
		}
		points = append(points, string(raw))
	}
	want := []string{
		fmt.Sprintf(`{"x":412,"y":310,"width":%d,"height":%d}`, shotW, shotH),
		fmt.Sprintf(`{"x":10,"y":20,"toX":700,"toY":0,"width":%d,"height":%d}`, shotW, shotH),
	}
	if len(points) != len(want) || points[0] != want[0] || points[1] != want[1] {
		t.Fatalf("points = %q, want %q", points, want)
	}
}
