package api_test

import (
	"bytes"
	"context"
	"image/jpeg"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestLiveStream: a running task's screen streams as multipart JPEG frames
// with their size; a queued task has no screenshot yet (404) and no stream.
func TestLiveStream(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	block := make(chan struct{})
	defer close(block)
	h.llm.Script("[[watch]]", llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block, Repeat: true})
	ctx := context.Background()
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"maxConcurrentVMs": 1}); err != nil {
		t.Fatal(err)
	}
	task, _ := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Be watched [[watch]]"})
	queued, _ := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Wait my turn [[watch]]"})
	h.waitTask(task.ID, "running", func(t wire.Task) bool { return t.Status == "running" })
	h.expect(404, "GET", "/api/v1/tasks/"+queued.ID+"/screenshot", nil)
	h.expect(409, "GET", "/api/v1/tasks/"+queued.ID+"/stream", nil)
	h.expect(400, "GET", "/api/v1/tasks/"+task.ID+"/stream?fps=100", nil)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", "http://"+h.addr+"/api/v1/tasks/"+task.ID+"/stream?fps=10&maxWidth=640", nil)
	req.Header.Set("Authorization", "Bearer "+h.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 200 || mt != "multipart/x-mixed-replace" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for i := range 3 {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(part)
		if part.Header.Get("Content-Type") != "image/jpeg" || !bytes.HasPrefix(buf.Bytes(), []byte{0xff, 0xd8}) || part.Header.Get("X-Frame-Width") != "640" {
			t.Fatalf("frame %d: %v, %d bytes", i, part.Header, buf.Len())
		}
	}
	// A thumbnail of the screen now: a fresh capture, at most maxWidth wide.
	shot := h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/screenshot?live=1&maxWidth=320", nil)
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(shot)); err != nil || cfg.Width != 320 {
		t.Fatalf("live screenshot: %+v, %v", cfg, err)
	}
	h.expect(400, "GET", "/api/v1/tasks/"+task.ID+"/screenshot?live=maybe", nil)
	h.expect(404, "GET", "/api/v1/tasks/"+queued.ID+"/screenshot?live=1", nil) // nothing to capture, nothing captured yet
	// The native VM window is a macOS guest's: the fake backend has none.
	out := h.expect(501, "POST", "/api/v1/tasks/"+task.ID+"/takeover", map[string]any{"action": "start", "native": true})
	if !strings.Contains(string(out), "web view") {
		t.Fatalf("native takeover without a window: %s", out)
	}
	// The schedule and template read endpoints answer single objects.
	h.expect(200, "GET", "/api/v1/templates/host", nil)
	if !strings.Contains(string(h.expect(200, "GET", "/api/v1/tasks/"+task.ID, nil)), `"status":"running"`) {
		t.Fatal("task is not running while streamed")
	}
}
