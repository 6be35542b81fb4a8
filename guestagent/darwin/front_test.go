package darwin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDesktop is the guest's frontmost app: an activation way brings the
// app forward only if the test lets it.
type fakeDesktop struct {
	// mu guards front and tried.
	mu    sync.Mutex
	front int32
	tried []string
}

func (d *fakeDesktop) frontmost() (int32, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.front == 42 {
		return 42, "TextEdit"
	}
	return d.front, "Finder"
}

// way is an activation that works (brings pid forward) or not.
func (d *fakeDesktop) way(name string, works bool, err error) activation {
	return activation{name: name, try: func(pid int32) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.tried = append(d.tried, name)
		if works {
			d.front = pid
		}
		return err
	}}
}

var quick = frontTiming{wait: 30 * time.Millisecond, poll: 5 * time.Millisecond}

// TestAppComesToTheFront: an open that brought the app forward needs no
// other way; one that did not is followed by cooperative activation and
// then Accessibility's, each checked, and the first that takes is said.
func TestAppComesToTheFront(t *testing.T) {
	var state frontState
	d := &fakeDesktop{front: 42}
	r := bringToFront(context.Background(), "TextEdit", 42, d.frontmost, []activation{d.way("cooperative activation", true, nil)}, quick)
	state.record(r, time.Now())
	if r.Way != "open with activation" || len(d.tried) != 0 || r.err() != nil || state.problem() != "" {
		t.Fatalf("already in front: %+v, tried %v, %v, %q", r, d.tried, r.err(), state.problem())
	}

	d = &fakeDesktop{front: 7}
	ways := []activation{d.way("cooperative activation", false, nil), d.way("accessibility", true, nil)}
	r = bringToFront(context.Background(), "TextEdit", 42, d.frontmost, ways, quick)
	if r.Way != "accessibility" || strings.Join(d.tried, ",") != "cooperative activation,accessibility" || r.err() != nil {
		t.Fatalf("behind Finder: %+v, tried %v, %v", r, d.tried, r.err())
	}
}

// TestAppKeptBehindIsReported: when macOS refuses every way, open_app says
// which app is in front and what was tried, and health_check reports it
// until an open brings its app forward again.
func TestAppKeptBehindIsReported(t *testing.T) {
	var state frontState
	d := &fakeDesktop{front: 7}
	ways := []activation{d.way("cooperative activation", false, nil), d.way("accessibility", false, errors.New("AXError -25211"))}
	r := bringToFront(context.Background(), "TextEdit", 42, d.frontmost, ways, quick)
	state.record(r, time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC))
	err := r.err()
	if err == nil || !strings.Contains(err.Error(), "TextEdit is open but macOS kept it behind Finder") ||
		!strings.Contains(err.Error(), "open with activation, cooperative activation, accessibility (AXError -25211)") {
		t.Fatalf("kept behind: %v", err)
	}
	p := state.problem()
	if !strings.Contains(p, "at 09:30:00 macOS kept TextEdit behind Finder") {
		t.Fatalf("health_check: %q", p)
	}
	d.front = 42
	state.record(bringToFront(context.Background(), "TextEdit", 42, d.frontmost, nil, quick), time.Now())
	if p := state.problem(); p != "" {
		t.Fatalf("after an app came forward, health_check still says %q", p)
	}
}

// TestBringToFrontYieldsToTheContext: a cancelled call stops waiting.
func TestBringToFrontYieldsToTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := &fakeDesktop{front: 7}
	start := time.Now()
	r := bringToFront(ctx, "TextEdit", 42, d.frontmost, nil, frontTiming{wait: time.Minute, poll: time.Second})
	if time.Since(start) > time.Second || r.Way != "" {
		t.Fatalf("a cancelled bringToFront took %s: %+v", time.Since(start), r)
	}
}
