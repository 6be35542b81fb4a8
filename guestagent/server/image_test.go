package server

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"slices"
	"sync"
	"testing"

	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// screenDriver captures a screen that the test paints on, numbering its
// frames and saying which rows changed since the previous capture, as the
// Linux driver's shared-memory capture does.
type screenDriver struct {
	*fakeDriver
	mu      sync.Mutex
	screen  *image.RGBA
	seq     uint64
	changed []frame.Rows
}

func newScreenDriver(w, h int) *screenDriver {
	d := &screenDriver{fakeDriver: &fakeDriver{}, screen: image.NewRGBA(image.Rect(0, 0, w, h))}
	for y := range h {
		for x := range w {
			d.screen.Pix[y*d.screen.Stride+4*x+0] = uint8(x)
			d.screen.Pix[y*d.screen.Stride+4*x+1] = uint8(y)
			d.screen.Pix[y*d.screen.Stride+4*x+2] = uint8(x ^ y)
		}
	}
	return d
}

// paint fills rows [y0, y1) between columns 50 and 250 with c.
func (d *screenDriver) paint(y0, y1 int, c [3]uint8) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for y := y0; y < y1; y++ {
		for x := 50; x < 250; x++ {
			copy(d.screen.Pix[y*d.screen.Stride+4*x:], c[:])
		}
	}
	d.changed = append(d.changed, frame.Rows{Y0: y0, Y1: y1})
}

// Capture returns the screen in the X layout (B, G, R, padding).
func (d *screenDriver) Capture(context.Context) (image.Image, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.screen
	f := &frame.Frame{Pix: make([]byte, len(s.Pix)), Stride: s.Stride, Width: s.Rect.Dx(), Height: s.Rect.Dy(), R: 2, G: 1, B: 0}
	for i := 0; i < len(s.Pix); i += 4 {
		f.Pix[i], f.Pix[i+1], f.Pix[i+2] = s.Pix[i+2], s.Pix[i+1], s.Pix[i]
	}
	d.seq++
	f.Seq = d.seq
	if d.seq > 1 {
		f.Changes = &frame.Changes{Since: d.seq - 1, Rows: frame.MergeRows(d.changed)}
	}
	d.changed = nil
	return f, nil
}

// want scales the screen as it is now with x/image/draw's ApproxBiLinear.
func (d *screenDriver) want(w, h int) *image.RGBA {
	d.mu.Lock()
	defer d.mu.Unlock()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), d.screen, d.screen.Bounds(), draw.Src, nil)
	return dst
}

// TestScaledScreenshotsShowEveryChange: the agent's scaled PNGs and the
// live view's JPEGs (scaled to another size, or not) take turns, and a
// screenshot shows what was painted since the last of its kind, including
// while screenshots of other kinds were taken in between (the scalers and
// encoders redo only what changed since their last frame, and must not
// miss that).
func TestScaledScreenshotsShowEveryChange(t *testing.T) {
	d := newScreenDriver(640, 400)
	h := newHarness(t, func(c *Config) { c.Driver = d })
	pngShot := func(what string) {
		t.Helper()
		res, err := call[protocol.ScreenshotResult](t, h.cli, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: "png", MaxWidth: 512})
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(res.Data))
		if err != nil {
			t.Fatal(err)
		}
		want := d.want(512, 320)
		if img.Bounds() != want.Bounds() {
			t.Fatalf("%s: %v, want %v", what, img.Bounds(), want.Bounds())
		}
		for y := range 320 {
			for x := range 512 {
				r, g, b, _ := img.At(x, y).RGBA()
				q := want.RGBAAt(x, y)
				for i, v := range []uint32{r >> 8, g >> 8, b >> 8} {
					if d := int(v) - int([]uint8{q.R, q.G, q.B}[i]); d > 2 || d < -2 {
						t.Fatalf("%s: pixel (%d, %d) is %d,%d,%d, want %v (within 2)", what, x, y, r>>8, g>>8, b>>8, q)
					}
				}
			}
		}
	}
	// jpegShot takes a live-view frame at half the screen's width, or
	// whole, and checks the middle of the band painted last, which JPEG
	// keeps within a few levels.
	half := true
	jpegShot := func(what string, y0, y1 int, c [3]uint8) {
		t.Helper()
		p, k := protocol.ScreenshotParams{Format: "jpeg", Quality: 90}, 1
		if half {
			p.MaxWidth, k = 320, 2
		}
		half = !half
		res, err := call[protocol.ScreenshotResult](t, h.cli, protocol.MethodScreenshot, p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(res.Data))
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := img.At(150/k, (y0+y1)/2/k).RGBA()
		got := []int{int(r >> 8), int(g >> 8), int(b >> 8)}
		for i := range 3 {
			if d := got[i] - int(c[i]); d > 12 || d < -12 {
				t.Fatalf("%s: the painted band shows %v, want %v", what, got, c)
			}
		}
	}
	pngShot("first")
	d.paint(20, 40, [3]uint8{0, 0, 0})
	jpegShot("first live frame", 20, 40, [3]uint8{0, 0, 0})
	d.paint(100, 120, [3]uint8{0, 200, 0})
	pngShot("a green band")
	d.paint(200, 240, [3]uint8{200, 0, 0})
	jpegShot("a red band", 200, 240, [3]uint8{200, 0, 0})
	d.paint(300, 302, [3]uint8{0, 0, 200})
	pngShot("the red band painted before a live frame, and a blue one after")
	for i := range 6 {
		// 4 rows, 2 of the live frame's, a 2×2 chroma block's height.
		c := [3]uint8{uint8(40 * i), 255, 0}
		d.paint(60+4*i, 64+4*i, c)
		jpegShot("a live frame", 60+4*i, 64+4*i, c)
	}
	pngShot("six bands painted between live frames")
	if !slices.Equal(d.changed, nil) {
		t.Fatalf("changes left over: %v", d.changed)
	}
}

// badFrameDriver captures a frame whose buffer is too small for its size.
type badFrameDriver struct{ *fakeDriver }

func (badFrameDriver) Capture(context.Context) (image.Image, error) {
	return &frame.Frame{Pix: make([]byte, 40), Stride: 40, Width: 10, Height: 10, R: 2, G: 1, B: 0}, nil
}

// TestScreenshotOfABadFrame: a driver's frame that does not describe its
// buffer is an internal error for every kind of screenshot, not a crash.
func TestScreenshotOfABadFrame(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Driver = badFrameDriver{&fakeDriver{}} })
	for _, p := range []protocol.ScreenshotParams{{Format: "png"}, {Format: "png", MaxWidth: 5}, {Format: "jpeg"}, {Format: "jpeg", MaxWidth: 5}} {
		if _, err := call[protocol.ScreenshotResult](t, h.cli, protocol.MethodScreenshot, p); codeOf(err) != protocol.CodeInternalError {
			t.Errorf("%+v: %v, want an internal error", p, err)
		}
	}
}
