package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestTaskReportsItsGuestScreen: a task with a running VM reports the
// guest's display in logical points and scale (what the web takeover view
// maps pointer events to); a queued or ended task reports none.
func TestTaskReportsItsGuestScreen(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.Backend = fake.New(fake.Options{Width: 1440, Height: 900, Scale: 2}) })
	h.addProvider()
	hold := make(chan struct{})
	h.llm.Script("[[screen]]", llmtest.Turn{Msg: llmtest.Text("Thinking.").Msg, Hold: hold})
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Look [[screen]]"})
	if err != nil {
		t.Fatal(err)
	}
	running := h.waitTask(task.ID, "running", func(t wire.Task) bool { return t.Status == "running" && t.Screen != nil })
	if s := running.Screen; s.Width != 1440 || s.Height != 900 || s.Scale != 2 {
		t.Fatalf("screen = %+v, want 1440x900 at scale 2", s)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+task.ID, nil), &raw)
	if string(raw["screen"]) != `{"width":1440,"height":900,"scale":2}` {
		t.Fatalf("screen on the wire = %s", raw["screen"])
	}
	close(hold)
	done := h.waitTask(task.ID, "the end", terminal)
	if done.Screen != nil {
		t.Fatalf("an ended task reports a screen: %+v", done.Screen)
	}
}
