package frame

import (
	"bytes"
	"fmt"
	"image"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/draw"
)

// reference scales f with x/image/draw's ApproxBiLinear, what the guest
// used before its own scaler.
func reference(f *Frame, w, h int) *image.RGBA {
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), f.RGBA(), f.Bounds(), draw.Src, nil)
	return dst
}

// scale scales f whole with a new scaler and returns a copy of the result.
func scale(f *Frame, w, h int) *Frame {
	var s Scaler
	g := s.Scale(f, w, h, nil)
	defer g.Release()
	return clone(g)
}

// speckle sets random pixels of rows [y0, y1) of f to random colours.
func speckle(f *Frame, y0, y1 int, rng *rand.Rand) {
	for y := y0; y < y1; y++ {
		for x := 0; x < f.Width; x += 1 + rng.IntN(7) {
			p := f.Pix[y*f.Stride+4*x:]
			p[f.R], p[f.G], p[f.B] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
		}
	}
}

// screen is a source of numbered frames that says which rows changed
// since the previous one, and notes them in a changelog, as the server
// does with captures.
type screen struct {
	src *Frame
	seq uint64
	log Changelog
	rng *rand.Rand
}

func newScreen(w, h int, seed uint64) *screen {
	return &screen{src: desktop(w, h, seed), rng: rand.New(rand.NewPCG(seed, seed))}
}

// next changes rows of the screen and returns a frame of it.
func (s *screen) next(rows ...Rows) *Frame {
	s.seq++
	for _, r := range rows {
		speckle(s.src, r.Y0, r.Y1, s.rng)
	}
	f := clone(s.src)
	f.Seq = s.seq
	if s.seq > 1 {
		f.Changes = &Changes{Since: s.seq - 1, Rows: rows}
	}
	s.log.Add(f)
	return f
}

// TestScaleMatchesReference: the scaler's output is within 2 levels of
// ApproxBiLinear's in every channel of every pixel, at the sizes the
// guest is asked for and at odd ratios, on a desktop and on noise.
func TestScaleMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	noise := desktop(301, 199, 2)
	speckle(noise, 0, noise.Height, rng)
	for _, c := range []struct {
		f    *Frame
		w, h int
	}{
		{desktop(1280, 800, 1), 1024, 640},
		{desktop(1280, 800, 1), 480, 300},
		{desktop(1280, 800, 1), 333, 211},
		{noise, 150, 99},
		{noise, 300, 199},
		{noise, 1, 1},
	} {
		got, want := scale(c.f, c.w, c.h), reference(c.f, c.w, c.h)
		worst, sum := 0, 0
		for y := range c.h {
			for x := range c.w {
				p, q := got.Pix[y*got.Stride+4*x:], want.Pix[y*want.Stride+4*x:]
				for i := range 3 {
					d := max(int(p[i])-int(q[i]), int(q[i])-int(p[i]))
					worst, sum = max(worst, d), sum+d
				}
				if p[3] != 0xff {
					t.Fatalf("%dx%d: alpha %d at (%d, %d), want opaque", c.w, c.h, p[3], x, y)
				}
			}
		}
		if mean := float64(sum) / float64(3*c.w*c.h); worst > 2 || mean > 0.6 {
			t.Errorf("%dx%d from %dx%d: differs from ApproxBiLinear by up to %d levels (mean %.2f), want at most 2 (mean 0.6)",
				c.w, c.h, c.f.Width, c.f.Height, worst, mean)
		}
	}
}

// TestScaleShowsEveryChange: a scaler that rescales only the rows a frame
// says changed produces exactly what scaling that frame whole does,
// frame after frame, whether it learns the changes from the frame or from
// a changelog across frames it did not see; and when nothing vouches for
// the changes (a frame since an unseen one, an unnumbered one), it
// rescales everything rather than show a stale row.
func TestScaleShowsEveryChange(t *testing.T) {
	const w, h = 512, 320
	var s, logged Scaler
	scr := newScreen(640, 400, 3)
	next := func(changes []Rows) *Frame { return scr.next(changes...) }
	src, log := scr.src, &scr.log
	// whole: the frame must be rescaled whole; otherwise it must not.
	check := func(what string, s *Scaler, f *Frame, l *Changelog, whole bool) {
		t.Helper()
		g := s.Scale(f, w, h, l)
		defer g.Release()
		if want := scale(f, w, h); !bytes.Equal(g.Pix, want.Pix) {
			t.Fatalf("%s: the scaled frame differs from scaling the frame whole", what)
		}
		n := 0
		if g.Changes == nil {
			n = h
		} else {
			for _, r := range g.Changes.Rows {
				n += r.Y1 - r.Y0
			}
		}
		if whole != (n == h) {
			t.Errorf("%s: %d rows of %d rescaled, want whole: %v", what, n, h, whole)
		}
	}
	check("first frame", &s, next(nil), nil, true)
	// Rows 100-110 of 400 feed rows 79-88 of 320 (bilinear reads the
	// neighbours): no more.
	check("a changed band", &s, next([]Rows{{100, 110}}), nil, false)
	// Each source row on its own: 400 to 320 rows, a row is read by one
	// or two rows of out, as the first or the second of the pair.
	for y := 150; y < 170; y++ {
		check(fmt.Sprintf("row %d changed", y), &s, next([]Rows{{y, y + 1}}), nil, false)
	}
	logged.Scale(clone(src), w, h, nil).Release() // unnumbered: it gets no changes
	check("first numbered frame for the logged scaler", &logged, next([]Rows{{0, 1}}), log, true)
	g := s.Scale(src, w, h, nil)
	g.Release() // an unnumbered frame: scaled whole, and the chain is broken
	check("after an unnumbered frame", &s, next([]Rows{{200, 201}}), nil, true)
	check("changes since the frame it saw", &s, next([]Rows{{10, 12}, {300, 302}}), nil, false)
	// The logged scaler skipped three frames: the log merges their changes.
	check("three frames later, from the log", &logged, next([]Rows{{50, 60}}), log, false)
	// A frame whose changes are since a frame the scaler never saw.
	next([]Rows{{120, 130}})
	check("changes since an unseen frame", &s, next([]Rows{{140, 150}}), nil, true)
	// The log cannot vouch across a frame that changed everything.
	whole := next(nil)
	whole.Changes = nil
	log.Add(whole)
	check("the log across a whole frame", &logged, next([]Rows{{5, 6}}), log, true)
}

// TestChangelogSince: the log merges the changes of consecutive frames
// and says nothing when a frame is missing, too old, or changed whole.
func TestChangelogSince(t *testing.T) {
	var l Changelog
	add := func(seq uint64, rows ...Rows) *Frame {
		f := &Frame{Seq: seq, Changes: &Changes{Since: seq - 1, Rows: rows}}
		l.Add(f)
		return f
	}
	add(1)
	add(2, Rows{10, 20})
	add(3, Rows{15, 30}, Rows{50, 51})
	f := add(4, Rows{0, 5})
	got := l.Since(1, f)
	want := []Rows{{0, 5}, {10, 30}, {50, 51}}
	if got == nil || got.Since != 1 || !equalRows(got.Rows, want) {
		t.Errorf("since 1: %+v, want %v", got, want)
	}
	if got := l.Since(4, f); got == nil || len(got.Rows) != 0 {
		t.Errorf("since the frame itself: %+v, want no rows", got)
	}
	if got := l.Since(5, f); got != nil {
		t.Errorf("since a later frame: %+v, want nil", got)
	}
	add(6, Rows{1, 2}) // 5 was never noted
	if got := l.Since(4, &Frame{Seq: 6}); got != nil {
		t.Errorf("across a missing frame: %+v, want nil", got)
	}
	for n := uint64(7); n < 9+changelogLen; n++ {
		f = add(n)
	}
	if got := l.Since(7, f); got != nil {
		t.Errorf("since a frame the log forgot: %+v, want nil", got)
	}
}

func equalRows(a, b []Rows) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkScale scales a 1280x800 desktop to 1024x640 (the agent's
// default): x/image/draw's ApproxBiLinear after converting to RGBA (what
// the guest did), the scaler whole, and the scaler told that a line of
// text changed.
func BenchmarkScale(b *testing.B) {
	f := desktop(1280, 800, 1)
	b.Run("reference", func(b *testing.B) {
		defer cpuTime(b)()
		for b.Loop() {
			reference(f, 1024, 640)
		}
	})
	b.Run("whole", func(b *testing.B) {
		var s Scaler
		b.ReportAllocs()
		defer cpuTime(b)()
		for b.Loop() {
			s.Scale(f, 1024, 640, nil).Release()
		}
	})
	b.Run("a-line-of-text-changed", func(b *testing.B) {
		var s Scaler
		b.ReportAllocs()
		defer cpuTime(b)()
		for i := 0; b.Loop(); i++ {
			y := 300 + (i%20)*12
			f.Seq = uint64(i + 1)
			f.Changes = &Changes{Since: uint64(i), Rows: []Rows{{y, y + 12}}}
			s.Scale(f, 1024, 640, nil).Release()
		}
	})
}

// BenchmarkScaledPNG is the guest's path for the agent's screenshot of a
// 1280x800 screen at 1024x640 while a line of text changes between frames
// (as the capture reports it): before, every frame converted to RGBA,
// scaled whole by x/image/draw and compared row by row by the encoder;
// now, the scaler rescales the rows the capture says changed and tells
// the encoder which.
func BenchmarkScaledPNG(b *testing.B) {
	change := func(f *Frame, i int) {
		y := 300 + (i%20)*12
		for x := 200; x < 900; x++ {
			f.Pix[(y+3)*f.Stride+4*x] = byte(i + x)
		}
		f.Seq = uint64(i + 1)
		f.Changes = &Changes{Since: uint64(i), Rows: []Rows{{y + 3, y + 4}}}
	}
	b.Run("before", func(b *testing.B) {
		f := desktop(1280, 800, 1)
		var e Encoder
		b.ReportAllocs()
		defer cpuTime(b)()
		for i := 0; b.Loop(); i++ {
			change(f, i)
			if _, _, err := e.Encode(FromImage(reference(f, 1024, 640))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after", func(b *testing.B) {
		f := desktop(1280, 800, 1)
		var e Encoder
		var s Scaler
		b.ReportAllocs()
		defer cpuTime(b)()
		for i := 0; b.Loop(); i++ {
			change(f, i)
			g := s.Scale(f, 1024, 640, nil)
			_, _, err := e.Encode(g)
			g.Release()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
