package linux

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

const (
	// settleQuiet is how long the screen must go undrawn after input
	// before a capture counts as showing the input's effect: applications
	// redraw within a frame or two of an event, and a terminal or an editor
	// draws a line in several passes.
	settleQuiet = 30 * time.Millisecond
	// settleMax bounds the wait: an animation (a spinner, a video, a
	// blinking caret) never goes quiet.
	settleMax = time.Second
)

// settler knows when the screen was last drawn and when input was last
// posted, so that a capture after input waits for the applications to
// draw its effect. It watches the root window with a DAMAGE object of its
// own (the capture's object accumulates regions; this one only tells time)
// and empties it at each event, so the next drawing reports again.
type settler struct {
	conn *xgb.Conn
	// id is 0 without DAMAGE: then only the time since input counts.
	id damage.Damage
	// lastDraw, lastInput and lastCapture are Unix nanoseconds.
	lastDraw, lastInput, lastCapture atomic.Int64
}

func newSettler(conn *xgb.Conn, root xproto.Window) (*settler, error) {
	s := &settler{conn: conn}
	if err := damage.Init(conn); err != nil {
		return s, fmt.Errorf("no DAMAGE extension: %w", err)
	}
	if err := xfixes.Init(conn); err != nil {
		return s, fmt.Errorf("no XFIXES extension: %w", err)
	}
	if _, err := xfixes.QueryVersion(conn, 2, 0).Reply(); err != nil {
		return s, fmt.Errorf("XFIXES: %w", err)
	}
	if _, err := damage.QueryVersion(conn, 1, 1).Reply(); err != nil {
		return s, fmt.Errorf("DAMAGE: %w", err)
	}
	id, err := damage.NewDamageId(conn)
	if err == nil {
		err = damage.CreateChecked(conn, id, xproto.Drawable(root), damage.ReportLevelNonEmpty).Check()
	}
	if err != nil {
		return s, fmt.Errorf("DAMAGE on the root window: %w", err)
	}
	s.id = id
	return s, nil
}

// drawn notes a damage event; it runs on the event loop.
func (s *settler) drawn(e damage.NotifyEvent) {
	if s.id == 0 || e.Damage != s.id {
		return
	}
	s.lastDraw.Store(time.Now().UnixNano())
	damage.Subtract(s.conn, s.id, xfixes.RegionNone, xfixes.RegionNone)
}

// input notes that input reached the X server.
func (s *settler) input() { s.lastInput.Store(time.Now().UnixNano()) }

// wait returns once the screen has gone settleQuiet without drawing since
// the last input, at once when there was no input since the previous
// capture, and after settleMax at most. It returns how long it waited.
func (s *settler) wait(ctx context.Context) time.Duration {
	start := time.Now()
	defer s.lastCapture.Store(time.Now().UnixNano())
	if s.lastInput.Load() <= s.lastCapture.Load() {
		return 0
	}
	deadline := start.Add(settleMax)
	for {
		last := max(s.lastInput.Load(), s.lastDraw.Load())
		now := time.Now()
		quiet := now.Sub(time.Unix(0, last))
		if quiet >= settleQuiet || !now.Before(deadline) {
			return now.Sub(start)
		}
		t := time.NewTimer(min(settleQuiet-quiet, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Since(start)
		case <-t.C:
		}
	}
}

func (s *settler) close() {
	if s.id != 0 {
		damage.Destroy(s.conn, s.id)
	}
}
