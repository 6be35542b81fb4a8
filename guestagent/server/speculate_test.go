package server

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// drawSource is a settle.FrameSource the test makes report redraws.
type drawSource struct {
	mu    sync.Mutex
	drawn func()
}

func (s *drawSource) Start(_ context.Context, drawn func(), _ func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drawn = drawn
	return nil
}

func (s *drawSource) Stop() {}

func (s *drawSource) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn != nil {
		s.drawn()
	}
}

// settlingDriver is a screenDriver whose captures wait for the screen to
// settle (a Speculator); afterCapture, if set, runs after its next
// capture, as an application drawing just after it.
type settlingDriver struct {
	*screenDriver
	st           *settle.Settler
	src          *drawSource
	captures     atomic.Int32
	afterCapture func()
}

func (d *settlingDriver) Settler() *settle.Settler { return d.st }

func (d *settlingDriver) Capture(ctx context.Context) (image.Image, error) {
	d.st.Wait(ctx)
	return d.CaptureNow(ctx)
}

func (d *settlingDriver) CaptureNow(ctx context.Context) (image.Image, error) {
	d.captures.Add(1)
	img, err := d.screenDriver.Capture(ctx)
	if f := d.afterCapture; f != nil {
		d.afterCapture = nil
		f()
	}
	return img, err
}

// TestScreenshotAfterInputIsEncodedDuringTheSettle: after input, the
// screenshot still waits for the screen to settle, but is captured once,
// early, when nothing is drawn after that capture; when an application
// draws after the early capture, the screenshot is captured again and
// shows the drawing.
func TestScreenshotAfterInputIsEncodedDuringTheSettle(t *testing.T) {
	src := &drawSource{}
	d := &settlingDriver{screenDriver: newScreenDriver(320, 200), src: src, st: settle.New(settle.Config{Source: src})}
	t.Cleanup(d.st.Close)
	h := newHarness(t, func(c *Config) { c.Driver = d })
	shot := func() image.Image {
		t.Helper()
		res, err := call[protocol.ScreenshotResult](t, h.cli, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: "png"})
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(res.Data))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	// input posts input once the source reports redraws, and returns when
	// it did: the settle's quiet counts from then. (The first Input only
	// starts the source; its start is a change too, so the quiet must be
	// measured from an input after it.)
	input := func() time.Time {
		d.st.Input()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, live := d.st.Mark(); live {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the source did not start")
			}
		}
		posted := time.Now()
		d.st.Input()
		return posted
	}
	painted := func(img image.Image) bool {
		r, g, b, _ := img.At(100, 60).RGBA()
		return r>>8 == 200 && g>>8 == 10 && b>>8 == 10
	}

	start := input()
	if painted(shot()) {
		t.Fatal("the screen shows a paint that never happened")
	}
	if waited := time.Since(start); waited < settle.DefaultQuiet {
		t.Fatalf("the screenshot came %s after input, before the screen settled (%s)", waited, settle.DefaultQuiet)
	}
	if n := d.captures.Load(); n != 1 {
		t.Fatalf("%d captures for a screen that did not change after the early one, want 1", n)
	}

	// An application draws just after the early capture.
	d.captures.Store(0)
	d.afterCapture = func() {
		d.paint(50, 70, [3]uint8{200, 10, 10})
		src.draw()
	}
	input()
	if !painted(shot()) {
		t.Fatal("the screenshot does not show what was drawn after the early capture")
	}
	if n := d.captures.Load(); n != 2 {
		t.Fatalf("%d captures, want the early one and one after the settle", n)
	}

	// No input since: no wait, one capture.
	d.captures.Store(0)
	shot()
	if n := d.captures.Load(); n != 1 {
		t.Fatalf("%d captures without input, want 1", n)
	}
}
