package frame

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"testing"
)

// decodeJPEG decodes data into YCbCr planes.
func decodeJPEG(t *testing.T, data []byte) *image.YCbCr {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	y, ok := img.(*image.YCbCr)
	if !ok {
		t.Fatalf("decoded a %T, want *image.YCbCr", img)
	}
	return y
}

// stdJPEG is image/jpeg's encoding of f in one piece, what the guest sent
// before it encoded in bands.
func stdJPEG(t *testing.T, f *Frame, quality int) *image.YCbCr {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, f.YCbCr(), &jpeg.Options{Quality: quality}); err != nil {
		t.Fatal(err)
	}
	return decodeJPEG(t, buf.Bytes())
}

// sameImage fails unless a and b hold the same samples.
func sameImage(t *testing.T, what string, a, b *image.YCbCr) {
	t.Helper()
	if a.Rect != b.Rect || a.SubsampleRatio != b.SubsampleRatio {
		t.Fatalf("%s: %v %v, want %v %v", what, a.Rect, a.SubsampleRatio, b.Rect, b.SubsampleRatio)
	}
	for y := range a.Rect.Dy() {
		for x := range a.Rect.Dx() {
			if a.YCbCrAt(x, y) != b.YCbCrAt(x, y) {
				t.Fatalf("%s: pixel (%d, %d) is %v, want %v", what, x, y, a.YCbCrAt(x, y), b.YCbCrAt(x, y))
			}
		}
	}
}

// TestJPEGMatchesImageJPEG: the banded JPEG decodes to exactly what
// image/jpeg's single-piece encoding does, at sizes that fill their last
// band and MCU and sizes that do not.
func TestJPEGMatchesImageJPEG(t *testing.T) {
	for _, c := range []struct{ w, h, q int }{{1280, 800, 70}, {301, 199, 90}, {17, 15, 50}, {1, 1, 80}} {
		f := desktop(c.w, c.h, 6)
		speckle(f, 0, c.h, rand.New(rand.NewPCG(1, 2)))
		var e JPEGEncoder
		data, err := e.Encode(f, c.q, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameImage(t, fmt.Sprintf("%dx%d q%d", c.w, c.h, c.q), decodeJPEG(t, data), stdJPEG(t, f, c.q))
	}
}

// TestJPEGShowsEveryChange: frame after frame, a JPEG encoder that
// reuses the bands whose rows did not change decodes to the frame's
// encoding in one piece, whether it learns the changes from the frame or
// from a changelog across frames it did not see; what nothing vouches for
// (a frame since an unseen one, an unnumbered one, a new quality) is
// encoded anew.
func TestJPEGShowsEveryChange(t *testing.T) {
	var e, logged JPEGEncoder
	scr := newScreen(320, 200, 4)
	next, src, log := scr.next, scr.src, &scr.log
	check := func(what string, e *JPEGEncoder, f *Frame, q int, l *Changelog, reused int) {
		t.Helper()
		before := make([][]byte, len(e.bands))
		copy(before, e.bands)
		data, err := e.Encode(f, q, l)
		if err != nil {
			t.Fatal(err)
		}
		sameImage(t, what, decodeJPEG(t, data), stdJPEG(t, f, q))
		n := 0
		for i := range min(len(before), len(e.bands)) {
			if before[i] != nil && &before[i][0] == &e.bands[i][0] {
				n++
			}
		}
		if n != reused {
			t.Errorf("%s: %d bands reused, want %d", what, n, reused)
		}
	}
	check("first frame", &e, next(), 70, nil, 0)
	check("rows 20-40 changed", &e, next(Rows{20, 40}), 70, nil, 13-2)
	check("row 47 changed", &e, next(Rows{47, 48}), 70, nil, 12)
	check("two rows far apart", &e, next(Rows{0, 1}, Rows{199, 200}), 70, nil, 11)
	check("another quality", &e, next(Rows{100, 101}), 80, nil, 0)
	check("nothing changed", &e, next(), 80, nil, 13)
	check("first frame for the logged encoder", &logged, next(Rows{5, 6}), 80, log, 0)
	e.Encode(clone(src), 80, nil) // unnumbered
	check("after an unnumbered frame", &e, next(Rows{60, 61}), 80, nil, 0)
	next(Rows{64, 65})
	check("changes since an unseen frame", &e, next(Rows{70, 71}), 80, nil, 0)
	check("two frames later, from the log", &logged, next(Rows{150, 151}), 80, log, 13-3) // bands 3, 4 and 9
}

// BenchmarkJPEG encodes a 1280x800 desktop at quality 70 (the live view):
// before, image/jpeg in one piece; the banded encoder when every row
// changed (on as many cores as there are), and when a line of text did.
func BenchmarkJPEG(b *testing.B) {
	f := desktop(1280, 800, 1)
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuTime(b)()
		for b.Loop() {
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, f.YCbCr(), &jpeg.Options{Quality: 70}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("every-row-changed", func(b *testing.B) {
		var e JPEGEncoder
		b.ReportAllocs()
		defer cpuTime(b)()
		for i := 0; b.Loop(); i++ {
			f.Seq = uint64(i + 1)
			f.Changes = &Changes{Since: uint64(i), Rows: []Rows{{0, 800}}}
			if _, err := e.Encode(f, 70, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("a-line-of-text-changed", func(b *testing.B) {
		var e JPEGEncoder
		b.ReportAllocs()
		defer cpuTime(b)()
		for i := 0; b.Loop(); i++ {
			y := 300 + (i%20)*12
			f.Seq = uint64(i + 1)
			f.Changes = &Changes{Since: uint64(i), Rows: []Rows{{y, y + 12}}}
			if _, err := e.Encode(f, 70, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
