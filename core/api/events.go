package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// sseHeartbeat keeps an idle event stream open through proxies.
const sseHeartbeat = 15 * time.Second

// eventType is the type an event is sent under: one of the Swift
// server's (screenshot, tool_call_start, tool_call_result, llm_response,
// status_change, subagent_update, question, permission_request). What the
// user did (instructions, answers, plan edits; stored as llm_request or
// question by older versions) is a status_change, as Swift sends it.
func eventType(e store.Event) string {
	switch {
	case e.Type == "llm_request":
		return "status_change"
	case e.Type == "question" && e.ActivityType == "user_answer":
		return "status_change"
	}
	return e.Type
}

func eventJSON(e store.Event) wire.Event {
	w := wire.Event{Seq: e.Seq, Type: eventType(e), Timestamp: ts(e.Timestamp), Data: wire.EventData{
		Summary: e.Summary, ActivityType: e.ActivityType, Details: e.Details, Reasoning: e.Reasoning,
		Status: e.Status, TaskID: e.TaskID, SubagentID: e.SubagentID,
	}}
	if e.ScreenshotPath != "" {
		w.Data.Screenshot = fmt.Sprintf("/api/v1/tasks/%s/screenshots/%d", e.TaskID, e.Seq)
	}
	if e.Point != nil {
		p := wire.Point(*e.Point)
		w.Data.Point = &p
	}
	return w
}

func (a *API) activity(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	since, err := intParam(r, "since", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 0, 0, 10000)
	if err != nil {
		return err
	}
	if _, err := a.st.GetTask(r.Context(), id); err != nil {
		return err
	}
	events, err := a.st.ListEvents(r.Context(), id, int64(since), limit)
	if err != nil {
		return err
	}
	total, err := a.st.CountEvents(r.Context(), id)
	if err != nil {
		return err
	}
	out := wire.Activity{Events: make([]wire.Event, len(events)), Total: total}
	for i, e := range events {
		out.Events[i] = eventJSON(e)
	}
	return writeJSON(w, http.StatusOK, out)
}

// events streams a task's activity as server-sent events: the past events
// first (after Last-Event-ID or ?since), then live ones, in order, each
// with its seq as id. The stream ends after the terminal status_change.
// With ?live=1 it also carries the model's answer as it streams
// (llm_stream events, see liveStream).
func (a *API) events(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	since, err := intParam(r, "since", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	withLive := false
	if v := r.URL.Query().Get("live"); v != "" {
		if withLive, err = formBool("live", v); err != nil {
			return err
		}
	}
	var live liveStream
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errdefs.Invalidf("Last-Event-ID %q: want an event seq", v)
		}
		since = int(n)
	}
	if _, err := a.st.GetTask(r.Context(), id); err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	last := int64(since)
	heartbeat := time.NewTicker(sseHeartbeat)
	defer heartbeat.Stop()
	for {
		changed := a.o.Watch(id) // before reading, so no change is missed
		events, err := a.st.ListEvents(r.Context(), id, last, 500)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(err.Error()))
			rc.Flush()
			return nil
		}
		var buf bytes.Buffer
		ended := false
		for _, e := range events {
			b, _ := json.Marshal(eventJSON(e))
			fmt.Fprintf(&buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, eventType(e), b)
			last = e.Seq
			if e.Type == "status_change" && store.TaskStatus(e.Status).Terminal() {
				ended = true
				break
			}
		}
		if withLive && !ended && len(events) < 500 {
			live.next(&buf, a.o, id)
		}
		if buf.Len() > 0 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return nil
			}
			rc.Flush()
		}
		if ended {
			return nil
		}
		if len(events) == 500 {
			continue // more to replay
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			rc.Flush()
		case <-r.Context().Done():
			return nil
		}
	}
}

// liveStream is what one event stream has sent of the model's streaming
// answer. An llm_stream event has no id (it is not stored, and a client
// reconnecting with Last-Event-ID resumes after the stored events): its
// data is {type, timestamp, data: {taskId, step, reset, text, reasoning}},
// where reset says the answer starts over and text and reasoning are what
// it grew by since the last llm_stream event (all of it after a reset).
type liveStream struct {
	gen                  uint64
	started              bool
	textLen, reasonedLen int
}

func (l *liveStream) next(buf *bytes.Buffer, o *orchestrator.Orchestrator, id string) {
	cur, ok := o.LiveAnswer(id)
	if !ok {
		return
	}
	reset := !l.started || cur.Gen != l.gen || len(cur.Text) < l.textLen || len(cur.Reasoning) < l.reasonedLen
	if reset {
		if cur.Text == "" && cur.Reasoning == "" && (!l.started || l.textLen+l.reasonedLen == 0) {
			l.gen, l.started = cur.Gen, true
			return // nothing to show, nothing shown
		}
		l.textLen, l.reasonedLen = 0, 0
	}
	text, reasoning := cur.Text[l.textLen:], cur.Reasoning[l.reasonedLen:]
	if !reset && text == "" && reasoning == "" {
		return
	}
	l.gen, l.started, l.textLen, l.reasonedLen = cur.Gen, true, len(cur.Text), len(cur.Reasoning)
	b, _ := json.Marshal(wire.LiveEvent{Type: "llm_stream", Timestamp: ts(time.Now()),
		Data: wire.LiveData{TaskID: id, Step: cur.Step, Reset: reset, Text: text, Reasoning: reasoning}})
	fmt.Fprintf(buf, "event: llm_stream\ndata: %s\n\n", b)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot serves a task's latest screenshot. With ?live=1 (extension)
// a running task's screen is captured now, as a JPEG at most maxWidth
// wide (default 480): a dashboard thumbnail then shows what the live view
// does, not the last step's screen.
func (a *API) screenshot(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := a.st.GetTask(r.Context(), id); err != nil {
		return err
	}
	if v := r.URL.Query().Get("live"); v != "" {
		live, err := formBool("live", v)
		if err != nil {
			return err
		}
		width, err := intParam(r, "maxWidth", 480, 16, 4096)
		if err != nil {
			return err
		}
		if live {
			p := protocol.ScreenshotParams{Format: protocol.FormatJPEG, MaxWidth: width, MaxHeight: width, Quality: 70}
			if frame, err := a.o.Frame(r.Context(), id, p); err == nil {
				w.Header().Set("Content-Type", "image/jpeg")
				w.Header().Set("Cache-Control", "no-store")
				_, err = w.Write(frame.Data)
				return err
			}
			// No VM to capture (not running, or released): the last one.
		}
	}
	path, err := a.st.LastScreenshot(r.Context(), id)
	if err != nil {
		return err
	}
	return a.serveScreenshot(w, r, path)
}

// eventScreenshot serves the screenshot of one event.
func (a *API) eventScreenshot(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		return errdefs.Invalidf("event seq %q: want a positive integer", r.PathValue("seq"))
	}
	events, err := a.st.ListEvents(r.Context(), id, seq-1, 1)
	if err != nil {
		return err
	}
	if len(events) == 0 || events[0].Seq != seq || events[0].ScreenshotPath == "" {
		return errdefs.NotFoundf("task %s has no screenshot at event %d", id, seq)
	}
	return a.serveScreenshot(w, r, events[0].ScreenshotPath)
}

// serveScreenshot serves a data-directory-relative screenshot path from
// inside the Sessions folder only.
func (a *API) serveScreenshot(w http.ResponseWriter, r *http.Request, path string) error {
	rel, ok := strings.CutPrefix(path, "Sessions/")
	if !ok {
		return errdefs.NotFoundf("screenshot not available")
	}
	ct := "image/png"
	if strings.HasSuffix(rel, ".jpg") || strings.HasSuffix(rel, ".jpeg") {
		ct = "image/jpeg"
	}
	w.Header().Set("Cache-Control", "no-cache")
	return serveFrom(w, r, a.cfg.Paths.Sessions(), filepath.FromSlash(rel), ct, "")
}

// stream serves live frames of a running task's screen as
// multipart/x-mixed-replace JPEG (an <img> shows it as video), at ?fps
// (default 2, at most 10), until the task stops running or the client
// leaves.
func (a *API) stream(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := a.st.GetTask(r.Context(), id); err != nil {
		return err
	}
	return serveFrames(w, r, func(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
		return a.o.Frame(ctx, id, p)
	})
}

// serveFrames serves the frames frame takes as multipart/x-mixed-replace
// JPEG at ?fps (default 2, at most 10) and ?maxWidth, until frame fails
// or the client leaves.
func serveFrames(w http.ResponseWriter, r *http.Request, frameOf func(context.Context, protocol.ScreenshotParams) (protocol.ScreenshotResult, error)) error {
	fps, err := intParam(r, "fps", 2, 1, 10)
	if err != nil {
		return err
	}
	width, err := intParam(r, "maxWidth", 1280, 16, 4096)
	if err != nil {
		return err
	}
	p := protocol.ScreenshotParams{Format: protocol.FormatJPEG, MaxWidth: width, MaxHeight: width, Quality: 70}
	frame, err := frameOf(r.Context(), p)
	if err != nil {
		return err
	}
	const boundary = "hivecrew-frame"
	w.Header().Set("Content-Type", "multipart/x-mixed-replace; boundary="+boundary)
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	tick := time.NewTicker(time.Second / time.Duration(fps))
	defer tick.Stop()
	for {
		fmt.Fprintf(w, "--%s\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\nX-Frame-Width: %d\r\nX-Frame-Height: %d\r\n\r\n", boundary, len(frame.Data), frame.Width, frame.Height)
		if _, err := w.Write(frame.Data); err != nil {
			return nil
		}
		fmt.Fprint(w, "\r\n")
		if rc.Flush() != nil {
			return nil
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return nil
		}
		if frame, err = frameOf(r.Context(), p); err != nil {
			fmt.Fprintf(w, "--%s--\r\n", boundary)
			return nil
		}
	}
}

// export writes a task's session as JSON, Markdown or a self-contained
// HTML replay.
func (a *API) export(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	format := r.URL.Query().Get("format")
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	var ct, ext string
	switch format {
	case "", "json":
		ct, ext = "application/json", "json"
	case "markdown", "md":
		ct, ext = "text/markdown; charset=utf-8", "md"
	case "html":
		ct, ext = "text/html; charset=utf-8", "html"
	default:
		return errdefs.Invalidf("format %q: want json, markdown or html", format)
	}
	if t.SessionID == "" {
		return errdefs.NotFoundf("task %s has no session to export yet", id)
	}
	sess, err := trace.Read(a.cfg.Paths.Session(t.SessionID))
	if err != nil {
		return errdefs.NotFoundf("session of task %s: %v", id, err)
	}
	info := trace.Info{TaskID: t.ID, Title: t.Title, Description: t.Description, Status: string(t.Status), Model: t.ModelID}
	if t.ResultSummary != nil {
		info.Summary = *t.ResultSummary
	}
	if t.StartedAt != nil {
		info.Started = *t.StartedAt
	}
	if t.CompletedAt != nil {
		info.Ended = *t.CompletedAt
	}
	var buf bytes.Buffer
	switch ext {
	case "json":
		err = trace.ExportJSON(&buf, info, sess)
	case "md":
		err = trace.ExportMarkdown(&buf, info, sess)
	case "html":
		err = trace.ExportHTML(&buf, info, sess)
	}
	if err != nil {
		return fmt.Errorf("export task %s: %w", id, err)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"hivecrew-%s.%s\"", id, ext))
	if ext == "html" {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
	}
	_, err = w.Write(buf.Bytes())
	return err
}
