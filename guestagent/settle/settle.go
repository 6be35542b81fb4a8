// Package settle decides when a screenshot taken after input shows what
// the input did: the capture waits until the screen has gone Quiet (30 ms)
// without a redraw since the last input, Max (1 s) at most (an animation,
// a video or a blinking caret never goes quiet), and not at all when there
// was no input since the previous capture. After input that draws (text
// typed, InputDrawing) the quiet counts only once the screen has been
// redrawn, FirstDraw (300 ms) at most: an application short of CPU may
// draw later than Quiet, and a screenshot taken before it showed the
// text not typed (a model then types it again).
//
// Redraws come from a FrameSource: the X DAMAGE extension on Linux,
// ScreenCaptureKit's frame updates on macOS. The Settler starts its source
// at the first input and may stop it after a while without input (a
// macOS capture stream costs power and may show the recording indicator);
// while the source is starting the wait holds, and once it reports the
// screen must stay quiet for Quiet from then on. Without a source, or
// after it failed, only the time since the input counts. The portable
// logic is tested with a fake source; the sources are the platforms'.
package settle

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	// DefaultQuiet is how long the screen must go undrawn after input:
	// applications redraw within a frame or two of an event, and a
	// terminal or an editor draws a line in several passes.
	DefaultQuiet = 30 * time.Millisecond
	// DefaultMax bounds the wait.
	DefaultMax = time.Second
	// DefaultFirstDraw is how long a wait after input that draws waits for
	// its first redraw: on a machine whose CPUs 16 agents kept busy, 6 to
	// 12% of the screenshots after a line typed into xterm were taken
	// before xterm drew it.
	DefaultFirstDraw = 300 * time.Millisecond
	// startTimeout bounds a source's Start.
	startTimeout = 5 * time.Second
)

// FrameSource reports the screen's redraws.
type FrameSource interface {
	// Start begins the reports: from when it returns nil until Stop
	// returns, drawn is called (on any goroutine) each time the screen is
	// redrawn, and lost at most once if the source stops by itself (the
	// Settler then starts it again at the next input). Start may block
	// until the source reports; ctx bounds it.
	Start(ctx context.Context, drawn func(), lost func(error)) error
	// Stop ends the reports. The source may be started again.
	Stop()
}

// Config configures a Settler. All fields are optional.
type Config struct {
	// Source reports redraws; nil: only the time since input counts.
	Source FrameSource
	// Quiet, Max and FirstDraw default to DefaultQuiet, DefaultMax and
	// DefaultFirstDraw.
	Quiet, Max, FirstDraw time.Duration
	// IdleStop stops the source after this long without input or
	// capture; 0 keeps it running from the first input until Close.
	IdleStop time.Duration
	// Log says when the source fails (once per distinct error).
	Log *slog.Logger
}

// sourceState is where the source is.
type sourceState int

const (
	stopped sourceState = iota
	starting
	live
)

// Settler notes input and redraws and makes captures wait. It is safe for
// concurrent use.
type Settler struct {
	cfg Config
	// lastDraw, lastInput and lastCapture are Unix nanoseconds, and so is
	// drawingInput, the last input that draws (InputDrawing).
	lastDraw, lastInput, lastCapture, drawingInput atomic.Int64
	// changes counts redraws and inputs (Mark).
	changes atomic.Uint64

	// mu guards the fields below.
	mu    sync.Mutex
	state sourceState
	// liveSince is when the source began reporting (Unix nanoseconds).
	liveSince int64
	// run counts the source's starts: reports of an earlier run are
	// ignored.
	run     int
	idle    *time.Timer
	lastErr string
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Settler; Close it.
func New(cfg Config) *Settler {
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.FirstDraw <= 0 {
		cfg.FirstDraw = DefaultFirstDraw
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Settler{cfg: cfg, ctx: ctx, cancel: cancel}
}

// Close stops the source and waits for a start under way.
func (s *Settler) Close() {
	s.mu.Lock()
	s.closed = true
	wasLive := s.state == live
	s.state = stopped
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if wasLive {
		s.cfg.Source.Stop()
	}
}

// Drawn notes a redraw (sources of their own call it through Start's
// drawn; the Linux event loop may call it directly).
func (s *Settler) Drawn() {
	s.lastDraw.Store(time.Now().UnixNano())
	s.changes.Add(1)
}

// InputDrawing is Input for input that draws (text typed into a focused
// window), which began to be posted at sent: the next capture waits for
// the screen's first redraw since sent, FirstDraw at most, before it
// counts the quiet. (A redraw may come before the posting returns.)
func (s *Settler) InputDrawing(sent time.Time) {
	s.drawingInput.Store(sent.UnixNano())
	s.Input()
}

// Input notes that input was posted, and starts the source if it is not
// running.
func (s *Settler) Input() {
	s.lastInput.Store(time.Now().UnixNano())
	s.changes.Add(1)
	if s.cfg.Source == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.state == stopped {
		s.state = starting
		s.run++
		s.wg.Add(1)
		go s.start(s.run)
	}
	s.armIdle()
}

// start runs the source's Start for run number run.
func (s *Settler) start(run int) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, startTimeout)
	defer cancel()
	err := s.cfg.Source.Start(ctx, s.Drawn, func(err error) { s.lost(run, err) })
	s.mu.Lock()
	if err != nil || s.closed || s.run != run {
		if s.state == starting && s.run == run {
			s.state = stopped
		}
		s.mu.Unlock()
		if err != nil {
			s.logFailure(err)
		} else {
			s.cfg.Source.Stop() // closed meanwhile
		}
		return
	}
	s.state, s.liveSince, s.lastErr = live, time.Now().UnixNano(), ""
	s.armIdle()
	s.mu.Unlock()
}

// lost notes that run's source stopped by itself.
func (s *Settler) lost(run int, err error) {
	s.mu.Lock()
	mine := s.run == run && s.state == live
	if mine {
		s.state = stopped
	}
	s.mu.Unlock()
	if mine {
		s.logFailure(err)
	}
}

func (s *Settler) logFailure(err error) {
	if err == nil {
		err = errors.New("the frame source stopped")
	}
	s.mu.Lock()
	repeat := s.lastErr == err.Error()
	s.lastErr = err.Error()
	s.mu.Unlock()
	if !repeat && s.cfg.Log != nil {
		s.cfg.Log.Warn("screen redraws are not reported: captures after input wait a fixed time", "err", err)
	}
}

// armIdle (re)starts the idle stop; s.mu is held.
func (s *Settler) armIdle() {
	if s.cfg.IdleStop <= 0 {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.cfg.IdleStop, s.idleStop)
		return
	}
	s.idle.Reset(s.cfg.IdleStop)
}

// idleStop stops a live source nothing has used for IdleStop.
func (s *Settler) idleStop() {
	s.mu.Lock()
	used := time.Unix(0, max(s.lastInput.Load(), s.lastCapture.Load()))
	if s.state != live || s.closed {
		s.mu.Unlock()
		return
	}
	if rest := s.cfg.IdleStop - time.Since(used); rest > 0 {
		s.idle.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.state = stopped
	s.mu.Unlock()
	s.cfg.Source.Stop()
}

// Wait returns once the screen has gone Quiet without a redraw since the
// last input, at once when there was no input since the previous Wait,
// and after Max at most (or when ctx ends). It returns how long it waited.
func (s *Settler) Wait(ctx context.Context) time.Duration {
	start := time.Now()
	defer s.lastCapture.Store(time.Now().UnixNano())
	if s.lastInput.Load() <= s.lastCapture.Load() {
		return 0
	}
	deadline := start.Add(s.cfg.Max)
	for {
		now := time.Now()
		if !now.Before(deadline) {
			return now.Sub(start)
		}
		s.mu.Lock()
		state, liveSince := s.state, s.liveSince
		s.mu.Unlock()
		var pause time.Duration
		switch state {
		case starting:
			// Nothing is known of the screen until the source reports.
			pause = s.cfg.Quiet / 3
		default:
			if wait := s.firstDraw(now, state, liveSince); wait > 0 {
				pause = min(wait, s.cfg.Quiet/3)
				break
			}
			quiet := now.Sub(time.Unix(0, s.lastChange(state, liveSince)))
			if quiet >= s.cfg.Quiet {
				return now.Sub(start)
			}
			pause = s.cfg.Quiet - quiet
		}
		t := time.NewTimer(min(pause, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Since(start)
		case <-t.C:
		}
	}
}

// firstDraw is how much longer, at now, the screen is waited on for its
// first redraw since the last input that draws: 0 once it was redrawn,
// after FirstDraw, or when the source does not report (nothing would tell
// the redraw) or began reporting after that input (it may have drawn
// unseen).
func (s *Settler) firstDraw(now time.Time, state sourceState, liveSince int64) time.Duration {
	in := s.drawingInput.Load()
	if in == 0 || state != live || liveSince > in || s.lastDraw.Load() >= in {
		return 0
	}
	return max(0, time.Unix(0, in).Add(s.cfg.FirstDraw).Sub(now))
}

// lastChange is when the screen last changed as far as is known: the last
// input, and while the source reports (state live since liveSince) its
// last redraw or its start (Unix nanoseconds).
func (s *Settler) lastChange(state sourceState, liveSince int64) int64 {
	last := s.lastInput.Load()
	if state == live {
		last = max(last, s.lastDraw.Load(), liveSince)
	}
	return last
}

// Pending reports whether input was posted since the last Wait: the next
// Wait will wait.
func (s *Settler) Pending() bool { return s.lastInput.Load() > s.lastCapture.Load() }

// QuietTime is the Quiet of the Settler's Config.
func (s *Settler) QuietTime() time.Duration { return s.cfg.Quiet }

// Mark is a point in the screen's history of redraws and input.
type Mark struct {
	changes uint64
	run     int
}

// Mark returns the present point of the screen's history, and false when
// the source is not reporting redraws: without it nothing tells a later
// redraw from none.
func (s *Settler) Mark() (Mark, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Mark{changes: s.changes.Load(), run: s.run}, s.state == live
}

// Changed reports whether since m the screen was redrawn, input was
// posted, or the source stopped or started again (a redraw may then have
// gone unreported).
func (s *Settler) Changed(m Mark) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != live || s.run != m.run || s.changes.Load() != m.changes
}

// Quiet returns true once the screen has gone d without a redraw or input
// while the source reports redraws, and false at once when it does not, or
// when ctx ends first. Unlike Wait it leaves the next Wait as it was: it
// lets a capture be taken early, to be kept if nothing changes by the end
// of the Wait (Mark, Changed).
func (s *Settler) Quiet(ctx context.Context, d time.Duration) bool {
	for {
		s.mu.Lock()
		state, liveSince := s.state, s.liveSince
		s.mu.Unlock()
		if state != live {
			return false
		}
		var pause time.Duration
		if wait := s.firstDraw(time.Now(), state, liveSince); wait > 0 {
			pause = min(wait, d/3)
		} else {
			quiet := time.Since(time.Unix(0, s.lastChange(state, liveSince)))
			if quiet >= d {
				return true
			}
			pause = d - quiet
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}
