package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// TestWatchFallsBackToPolling: when the event stream breaks before the
// end, watchTask polls the task and its activity, delivers every event
// once and in order, and returns the final task.
func TestWatchFallsBackToPolling(t *testing.T) {
	t.Parallel()
	events := []wire.Event{
		{Seq: 1, Type: "status_change", Data: wire.EventData{Status: "running"}},
		{Seq: 2, Type: "tool_call_result", Data: wire.EventData{Summary: "mouse_click Done."}},
		{Seq: 3, Type: "status_change", Data: wire.EventData{Status: "completed", Summary: "Done."}},
	}
	var taskReads atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/tasks/t1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(events[0])
		fmt.Fprintf(w, "id: 1\nevent: status_change\ndata: %s\n\n", b)
		w.(http.Flusher).Flush()
		// Then the connection breaks.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("GET /api/v1/tasks/t1", func(w http.ResponseWriter, r *http.Request) {
		status := "running"
		if taskReads.Add(1) >= 3 {
			status = "completed"
		}
		json.NewEncoder(w).Encode(wire.Task{ID: "t1", Status: status})
	})
	mux.HandleFunc("GET /api/v1/tasks/t1/activity", func(w http.ResponseWriter, r *http.Request) {
		var since int64
		fmt.Sscan(r.URL.Query().Get("since"), &since)
		n := 2 // the second event first, the last once the task has ended
		if taskReads.Load() >= 3 {
			n = 3
		}
		out := wire.Activity{Events: []wire.Event{}, Total: int64(n)}
		for _, e := range events[:n] {
			if e.Seq > since {
				out.Events = append(out.Events, e)
			}
		}
		json.NewEncoder(w).Encode(out)
	})
	dir, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []int64
	task, err := watchTask(ctx, client.NewUnix(sock), "t1", 10*time.Millisecond, func(e wire.Event) { got = append(got, e.Seq) })
	if err != nil || task.Status != "completed" {
		t.Fatalf("watchTask = %+v, %v", task, err)
	}
	if !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("events delivered: %v, want 1 2 3", got)
	}
}
