package settle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeSource is a frame source the test drives: Start takes startDelay
// (or fails with startErr), draw reports a redraw of the current run, die
// makes the source stop by itself.
type fakeSource struct {
	startDelay time.Duration
	startErr   error

	// mu guards the fields below.
	mu            sync.Mutex
	drawn         func()
	lost          func(error)
	starts, stops int
	running       bool
}

func (f *fakeSource) Start(ctx context.Context, drawn func(), lost func(error)) error {
	select {
	case <-time.After(f.startDelay):
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	if f.startErr != nil {
		return f.startErr
	}
	f.drawn, f.lost, f.running = drawn, lost, true
	return nil
}

func (f *fakeSource) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops++
	f.running, f.drawn, f.lost = false, nil, nil
}

func (f *fakeSource) draw() {
	f.mu.Lock()
	d := f.drawn
	f.mu.Unlock()
	if d != nil {
		d()
	}
}

func (f *fakeSource) die() {
	f.mu.Lock()
	l := f.lost
	f.running, f.drawn, f.lost = false, nil, nil
	f.mu.Unlock()
	l(errors.New("the display went away"))
}

func (f *fakeSource) counts() (starts, stops int, running bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, f.stops, f.running
}

// drawEvery redraws every period for length, or until the returned stop
// is called (a goroutine of the bubble, which must end with the test).
func drawEvery(f *fakeSource, period, length time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		end := time.Now().Add(length)
		for time.Now().Before(end) {
			select {
			case <-done:
				return
			case <-time.After(period):
			}
			f.draw()
		}
	}()
	return func() { close(done) }
}

// settler returns a Settler of src, closed when the test ends.
func settler(t *testing.T, src *fakeSource) *Settler {
	s := New(Config{Source: src})
	t.Cleanup(s.Close)
	return s
}

// TestWaitsUntilTheScreenIsQuiet: an application drawing for 200 ms after
// the input holds the capture until 30 ms after its last redraw.
func TestWaitsUntilTheScreenIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{startDelay: 5 * time.Millisecond}
		s := settler(t, src)
		s.Input()
		drawEvery(src, 10*time.Millisecond, 200*time.Millisecond)
		waited := s.Wait(context.Background())
		if waited < 200*time.Millisecond+DefaultQuiet || waited > 200*time.Millisecond+DefaultQuiet+10*time.Millisecond {
			t.Errorf("waited %s, want 30 ms after the last redraw at 200 ms", waited)
		}
	})
}

// TestWaitsAtMostMax: a screen that never goes quiet (a video) holds the
// capture for Max, not forever.
func TestWaitsAtMostMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := settler(t, src)
		s.Input()
		defer drawEvery(src, 5*time.Millisecond, time.Hour)()
		if waited := s.Wait(context.Background()); waited != DefaultMax {
			t.Errorf("waited %s, want %s", waited, DefaultMax)
		}
	})
}

// TestNoInputNoWait: a capture with no input since the previous one is
// taken at once, however busy the screen.
func TestNoInputNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := settler(t, src)
		s.Input()
		s.Wait(context.Background())
		defer drawEvery(src, 5*time.Millisecond, time.Hour)()
		if waited := s.Wait(context.Background()); waited != 0 {
			t.Errorf("waited %s without input", waited)
		}
	})
}

// TestQuietScreenWaitsOnlyQuiet: input that draws nothing costs the quiet
// period after the source reports, no more.
func TestQuietScreenWaitsOnlyQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{startDelay: 50 * time.Millisecond}
		s := settler(t, src)
		s.Input()
		// The source takes 50 ms to report: nothing is known before.
		if waited := s.Wait(context.Background()); waited != 50*time.Millisecond+DefaultQuiet {
			t.Errorf("first wait %s, want the start (50 ms) and the quiet period", waited)
		}
		// Live now: the next input waits the quiet period only.
		s.Input()
		if waited := s.Wait(context.Background()); waited != DefaultQuiet {
			t.Errorf("second wait %s, want %s", waited, DefaultQuiet)
		}
	})
}

// TestWithoutSourceTheTimeSinceInputCounts: no source (or one that fails)
// makes the capture wait the quiet period after the input, as on an X
// server without DAMAGE.
func TestWithoutSourceTheTimeSinceInputCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{})
		defer s.Close()
		s.Input()
		if waited := s.Wait(context.Background()); waited != DefaultQuiet {
			t.Errorf("waited %s, want %s", waited, DefaultQuiet)
		}
		failing := &fakeSource{startErr: errors.New("no Screen Recording permission")}
		f := New(Config{Source: failing})
		defer f.Close()
		f.Input()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if waited := f.Wait(context.Background()); waited != DefaultQuiet-time.Millisecond {
			t.Errorf("with a failing source: waited %s, want the rest of the quiet period", waited)
		}
		// The next input tries the source again.
		f.Input()
		synctest.Wait()
		if starts, _, _ := failing.counts(); starts != 2 {
			t.Errorf("%d starts after two inputs with a failing source, want 2", starts)
		}
	})
}

// TestCancelEndsTheWait: the kill switch is not held up by a busy screen.
func TestCancelEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := settler(t, src)
		s.Input()
		defer drawEvery(src, 5*time.Millisecond, time.Hour)()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if waited := s.Wait(ctx); waited != 100*time.Millisecond {
			t.Errorf("waited %s, want the context's 100 ms", waited)
		}
	})
}

// TestSourceStopsWhenIdleAndRestarts: the source runs only while input
// comes (a capture stream may show macOS's recording indicator), starts again
// at the next input, and again after it stopped by itself.
func TestSourceStopsWhenIdleAndRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := New(Config{Source: src, IdleStop: 10 * time.Second})
		s.Input()
		s.Wait(context.Background())
		if _, _, running := src.counts(); !running {
			t.Fatal("the source did not start at the first input")
		}
		time.Sleep(9 * time.Second)
		s.Input()
		s.Wait(context.Background())
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if starts, stops, running := src.counts(); !running || starts != 1 || stops != 0 {
			t.Fatalf("in use: starts %d stops %d running %v; want it running since the first input", starts, stops, running)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, stops, running := src.counts(); running || stops != 1 {
			t.Fatalf("idle 11 s: stops %d running %v; want it stopped", stops, running)
		}
		s.Input()
		s.Wait(context.Background())
		if starts, _, running := src.counts(); !running || starts != 2 {
			t.Fatalf("after idling: starts %d running %v; want a second start", starts, running)
		}
		src.die()
		s.Input()
		s.Wait(context.Background())
		if starts, _, running := src.counts(); !running || starts != 3 {
			t.Fatalf("after it died: starts %d running %v; want a third start", starts, running)
		}
		s.Close()
		if _, _, running := src.counts(); running {
			t.Error("Close left the source running")
		}
	})
}

// TestStartingSourceHoldsTheCapture: redraws before the source reports
// are unknown, not quiet: the capture waits for the source (Max at most).
func TestStartingSourceHoldsTheCapture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{startDelay: 2 * time.Second}
		s := settler(t, src)
		s.Input()
		if waited := s.Wait(context.Background()); waited != DefaultMax {
			t.Errorf("waited %s for a source that takes 2 s to start, want Max (%s)", waited, DefaultMax)
		}
	})
}

// TestMarkSaysWhetherAnEarlyCaptureStillHolds: Quiet returns after its
// shorter quiet, a Mark taken then stays unchanged through a Wait without
// redraws, and a redraw, an input or a restarted source changes it. With
// the source not reporting, Quiet and Mark refuse: nothing would tell a
// later redraw from none.
func TestMarkSaysWhetherAnEarlyCaptureStillHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := settler(t, src)
		s.Input()
		synctest.Wait() // the source starts
		start := time.Now()
		src.draw()
		if !s.Quiet(context.Background(), 10*time.Millisecond) {
			t.Fatal("Quiet refused with the source reporting")
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Fatalf("Quiet returned after %s, want 10 ms after the redraw", got)
		}
		m, ok := s.Mark()
		if !ok {
			t.Fatal("Mark says the source does not report")
		}
		s.Wait(context.Background())
		if s.Changed(m) {
			t.Fatal("nothing was drawn, yet the mark changed")
		}
		if s.Pending() {
			t.Fatal("Pending after Wait")
		}
		src.draw()
		if !s.Changed(m) {
			t.Fatal("a redraw left the mark unchanged")
		}
		m, _ = s.Mark()
		s.Input()
		if !s.Changed(m) || !s.Pending() {
			t.Fatal("an input left the mark unchanged, or nothing pending")
		}
		m, _ = s.Mark()
		src.die()
		if !s.Changed(m) {
			t.Fatal("a source that stopped left the mark unchanged")
		}
		if _, ok := s.Mark(); ok {
			t.Fatal("Mark says a stopped source reports")
		}
		if s.Quiet(context.Background(), time.Millisecond) {
			t.Fatal("Quiet said quiet without a source reporting")
		}
	})
}

// TestTypedTextWaitsForItsFirstDraw: after text typed (InputDrawing) the
// capture waits for the application's first redraw, even one later than
// the quiet period (an application short of CPU), then the quiet period;
// a redraw before the posting returned counts; FirstDraw at most when
// nothing draws; and a press that draws nothing
// (Input) still waits the quiet period alone. The early capture's Quiet
// waits for the first redraw alike.
func TestTypedTextWaitsForItsFirstDraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{}
		s := settler(t, src)
		s.Input()
		s.Wait(context.Background()) // the source is live from here on

		s.InputDrawing(time.Now())
		go func() {
			time.Sleep(80 * time.Millisecond)
			src.draw()
		}()
		if waited := s.Wait(context.Background()); waited < 80*time.Millisecond+DefaultQuiet || waited > 80*time.Millisecond+DefaultQuiet+DefaultQuiet/3 {
			t.Errorf("typed text drawn at 80 ms: waited %s, want the quiet period after that draw", waited)
		}

		// An application that draws before the typing's posting returns
		// (a fast one): that redraw, after the text was sent, is its draw.
		sent := time.Now()
		time.Sleep(5 * time.Millisecond)
		src.draw()
		time.Sleep(5 * time.Millisecond)
		s.InputDrawing(sent)
		if waited := s.Wait(context.Background()); waited != DefaultQuiet {
			t.Errorf("typed text drawn before its posting returned: waited %s, want %s", waited, DefaultQuiet)
		}

		s.InputDrawing(time.Now())
		if waited := s.Wait(context.Background()); waited < DefaultFirstDraw || waited > DefaultFirstDraw+DefaultQuiet/3 {
			t.Errorf("typed text never drawn: waited %s, want FirstDraw (%s)", waited, DefaultFirstDraw)
		}

		s.Input()
		if waited := s.Wait(context.Background()); waited != DefaultQuiet {
			t.Errorf("input that draws nothing: waited %s, want %s", waited, DefaultQuiet)
		}

		s.InputDrawing(time.Now())
		start := time.Now()
		go func() {
			time.Sleep(60 * time.Millisecond)
			src.draw()
		}()
		if !s.Quiet(context.Background(), DefaultQuiet/2) {
			t.Fatal("Quiet gave up while the source reports")
		}
		if d := time.Since(start); d < 60*time.Millisecond+DefaultQuiet/2 {
			t.Errorf("Quiet after typed text held %s, want the first draw (60 ms) and %s after it", d, DefaultQuiet/2)
		}
	})
}
