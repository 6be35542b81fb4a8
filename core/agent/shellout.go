package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Live shell output (issue 17.7): while run_shell runs, the guest streams
// the command's output ($/shellOutput). The runner gathers it and puts it
// in the activity feed (and so the agent window) every liveEvery, so the
// user watches a long command as it goes. The guest is not trusted with
// the feed: output is taken only while a run_shell call is in flight, at
// most liveCap bytes of it per call, and never blocks the guest
// connection's reader (ShellOutput only appends).

const (
	liveEvery = 500 * time.Millisecond
	liveCap   = 64 << 10
	liveChunk = 4 << 10 // the most one event holds
)

// liveShell gathers one run_shell call's output.
type liveShell struct {
	mu     sync.Mutex
	active bool
	buf    strings.Builder
	taken  int  // bytes taken this call
	cut    bool // liveCap was reached
}

// ShellOutput takes a $/shellOutput notification's params. It is called on
// the guest connection's reader and must not block.
func (r *Runner) ShellOutput(params json.RawMessage) {
	var p protocol.ShellOutputParams
	if len(params) > 2*liveCap || json.Unmarshal(params, &p) != nil {
		return
	}
	s := &r.live
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active || s.cut {
		return
	}
	data := p.Data
	if room := liveCap - s.taken; len(data) > room {
		data, s.cut = data[:room], true
	}
	s.taken += len(data)
	s.buf.WriteString(data)
}

// watchShell starts gathering a run_shell call's output; the returned stop
// ends it and reports what is left.
func (r *Runner) watchShell(step int) (stop func()) {
	s := &r.live
	s.mu.Lock()
	s.active, s.taken, s.cut = true, 0, false
	s.buf.Reset()
	s.mu.Unlock()
	done := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		t := time.NewTicker(liveEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.flushShell(step, false)
			case <-done:
				r.flushShell(step, true)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-flushed
	}
}

// flushShell puts the output gathered since the last flush in the feed;
// last also ends the call's gathering.
func (r *Runner) flushShell(step int, last bool) {
	s := &r.live
	s.mu.Lock()
	out, cut := s.buf.String(), s.cut && last
	s.buf.Reset()
	if last {
		s.active = false
	} else if shown := r.redactor.Hold(out); shown < len(out) {
		// What may be the start of a secret (or of a run of base64 that
		// may carry one) waits for the rest, so that it is found whole.
		s.buf.WriteString(out[shown:])
		out = out[:shown]
	}
	s.mu.Unlock()
	out = r.redactor.Redact(out) // whole, before it is cut in events
	for len(out) > 0 {
		chunk := out[:min(len(out), liveChunk)]
		out = out[len(chunk):]
		lines := strings.Split(strings.TrimRight(chunk, "\n"), "\n")
		r.emit(step, Event{Type: "status_change", ActivityType: "info", Tool: "run_shell",
			Summary: "run_shell output: " + truncate(lines[len(lines)-1], 200), Details: chunk})
	}
	if cut {
		r.emit(step, Event{Type: "status_change", ActivityType: "info", Tool: "run_shell",
			Summary: fmt.Sprintf("run_shell output: the live view stopped at %d KB; the command's result has the rest", liveCap>>10)})
	}
}
