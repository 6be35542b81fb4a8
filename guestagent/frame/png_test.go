package frame

import (
	"bytes"
	"hash/adler32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// desktop draws a screen-like frame in the X layout (B, G, R, padding):
// a flat background, a wide and a narrow window with repeated "text" rows
// (so deflate would reach into other bands if it could), and a gradient
// wallpaper strip. The padding byte is zero, as X servers leave it.
func desktop(w, h int, seed uint64) *Frame {
	rng := rand.New(rand.NewPCG(seed, 7))
	stride := 4*w + 12 // padding at the end of every row
	f := &Frame{Pix: make([]byte, stride*h), Stride: stride, Width: w, Height: h, R: 2, G: 1, B: 0}
	set := func(x, y int, r, g, b byte) {
		p := f.Pix[y*stride+4*x:]
		p[0], p[1], p[2], p[3] = b, g, r, 0
	}
	for y := range h {
		for x := range w {
			set(x, y, 0x30, 0x34, 0x38)
			if y < h/5 {
				set(x, y, byte(x*255/w), byte(y*255/(h/5+1)), 0x80)
			}
		}
	}
	glyph := make([]bool, 97) // one line of "text", repeated
	for i := range glyph {
		glyph[i] = rng.IntN(3) == 0
	}
	text := func(x0, y0, x1, y1 int) {
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				if y%12 < 9 && glyph[(x+y%12*13)%len(glyph)] {
					set(x, y, 0x10, 0x10, 0x10)
				} else {
					set(x, y, 0xf4, 0xf4, 0xf0)
				}
			}
		}
	}
	text(w/8, h/4, w*7/8, h*3/4) // wider than half the screen
	text(w/3, h*3/4+2, w/2, h)   // narrower
	return f
}

// noisy sets every padding byte of f to noise.
func noisy(f *Frame) *Frame {
	rng := rand.New(rand.NewPCG(5, 5))
	for y := range f.Height {
		for x := range f.Width {
			f.Pix[y*f.Stride+4*x+3] = byte(rng.IntN(256))
		}
	}
	return f
}

func clone(f *Frame) *Frame {
	c := *f
	c.Pix = bytes.Clone(f.Pix)
	return &c
}

// decode decodes a PNG and checks every pixel against f.
func decode(t *testing.T, data []byte, f *Frame) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if img.Bounds() != f.Bounds() {
		t.Fatalf("decoded %v, want %v", img.Bounds(), f.Bounds())
	}
	if _, ok := img.(*image.RGBA); !ok {
		t.Fatalf("decoded a %T, want 8-bit RGB (decoded as *image.RGBA)", img)
	}
	for y := range f.Height {
		for x := range f.Width {
			if got, want := img.At(x, y), f.At(x, y); color.RGBAModel.Convert(got) != want {
				t.Fatalf("pixel (%d, %d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, size := range []image.Point{{1, 1}, {1, 40}, {2, 3}, {33, 17}, {640, 400}, {1280, 800}} {
		f := desktop(size.X, size.Y, uint64(size.X))
		if size.X == 640 {
			noisy(f) // no row equals the one above it
		}
		var e Encoder
		data, st, err := e.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := (size.Y + bandRows - 1) / bandRows; st.Bands != want || st.Recompressed != want {
			t.Errorf("%v: stats %+v, want %d bands all compressed", size, st, want)
		}
		decode(t, data, f)
	}
}

func TestEncodeRGBALayoutAndPhotos(t *testing.T) {
	// Noise and a gradient make the encoder pick Sub, Up and Paeth rows.
	img := image.NewRGBA(image.Rect(0, 0, 300, 70))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := range 70 {
		for x := range 300 {
			n := byte(rng.IntN(8))
			img.SetRGBA(x, y, color.RGBA{byte(x) + n, byte(y*3) + n, byte(x+y) ^ n, 0xff})
		}
	}
	f := FromImage(img)
	var e Encoder
	data, _, err := e.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, data, f)
	seen := map[byte]bool{}
	var d Encoder
	d.Encode(f)
	for range cap(d.idle) { // the filtered rows each compressor holds
		c := <-d.idle
		for i := 0; i < len(c.rows); i += 1 + 3*300 {
			seen[c.rows[i]] = true
		}
	}
	if len(seen) < 2 {
		t.Errorf("filters used on a photo-like band: %v, want more than one kind", seen)
	}
}

// TestEncodeReusesUnchangedBands changes a few pixels between frames and
// checks that only the bands holding them (and the band below when the
// change is on a band's last row, which its first row's filter reads)
// are compressed again, and that the PNG still decodes to the new frame.
func TestEncodeReusesUnchangedBands(t *testing.T) {
	var e Encoder
	f := desktop(500, 300, 3)
	if _, _, err := e.Encode(f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ys   []int
		want int
	}{
		{"nothing changed", nil, 0},
		{"one row inside band 5", []int{5*bandRows + 3}, 1},
		{"last row of band 2", []int{3*bandRows - 1}, 2},
		{"first and last row of the screen", []int{0, 299}, 2},
		{"rows in three bands", []int{20, 100, 250}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := clone(f)
			for _, y := range tc.ys {
				for x := 100; x < 140; x++ {
					next.Pix[y*next.Stride+4*x+next.R] ^= 0x55
				}
			}
			data, st, err := e.Encode(next)
			if err != nil {
				t.Fatal(err)
			}
			if st.Recompressed != tc.want {
				t.Errorf("recompressed %d bands, want %d", st.Recompressed, tc.want)
			}
			decode(t, data, next)
			f = next
		})
	}
	t.Run("only the padding byte changed", func(t *testing.T) {
		next := clone(f)
		next.Pix[7*next.Stride+4*10+3] ^= 0xff
		data, _, err := e.Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, data, next)
		f = next
	})
	t.Run("another size starts over", func(t *testing.T) {
		g := desktop(320, 200, 4)
		data, st, err := e.Encode(g)
		if err != nil {
			t.Fatal(err)
		}
		if st.Recompressed != st.Bands {
			t.Errorf("stats %+v after a resize, want every band compressed", st)
		}
		decode(t, data, g)
	})
	t.Run("another pixel layout starts over", func(t *testing.T) {
		g := desktop(320, 200, 4)
		g.R, g.B = g.B, g.R
		data, st, err := e.Encode(g)
		if err != nil {
			t.Fatal(err)
		}
		if st.Recompressed != st.Bands {
			t.Errorf("stats %+v after a layout change, want every band compressed", st)
		}
		decode(t, data, g)
	})
}

// TestEncodeRandomEdits runs many frames with random edits through one
// encoder and decodes each against a fresh encoding of the same frame.
func TestEncodeRandomEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	f := desktop(257, 131, 5)
	var e Encoder
	for i := range 60 {
		next := clone(f)
		for range rng.IntN(4) {
			y0, x0 := rng.IntN(next.Height), rng.IntN(next.Width)
			for y := y0; y < min(y0+rng.IntN(40)+1, next.Height); y++ {
				for x := x0; x < min(x0+rng.IntN(80)+1, next.Width); x++ {
					copy(next.Pix[y*next.Stride+4*x:], []byte{byte(i), byte(x), byte(y), 0})
				}
			}
		}
		data, _, err := e.Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, data, next)
		f = next
	}
}

func TestEncodeRefusesBadFrames(t *testing.T) {
	var e Encoder
	for _, f := range []*Frame{
		{Width: 0, Height: 1, Stride: 4, Pix: make([]byte, 4)},
		{Width: 2, Height: 2, Stride: 4, Pix: make([]byte, 16)},
		{Width: 2, Height: 2, Stride: 8, Pix: make([]byte, 15)},
		{Width: 2, Height: 2, Stride: 8, Pix: make([]byte, 16), R: 4},
	} {
		if _, _, err := e.Encode(f); err == nil {
			t.Errorf("Encode(%dx%d stride %d, %d bytes, R at %d) succeeded", f.Width, f.Height, f.Stride, len(f.Pix), f.R)
		}
	}
}

func TestAdler(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	data := make([]byte, 40000)
	for i := range data {
		if rng.IntN(3) == 0 { // runs of zeros, and 0xff bytes for the largest sums
			data[i] = 0xff
		}
	}
	copy(data[100:], bytes.Repeat([]byte{0xff}, 12000))
	for _, n := range []int{0, 1, 7, 8, 9, 5552, 5553, 12345, len(data)} {
		if got, want := adler(1, data[:n]), adler32.Checksum(data[:n]); got != want {
			t.Errorf("%d bytes: %#x, want %#x", n, got, want)
		}
	}
}

func TestSpan(t *testing.T) {
	a := make([]byte, 4*37)
	if l, r := span(a, a); l != r {
		t.Errorf("equal rows: span [%d, %d), want empty", l, r)
	}
	for _, d := range []int{0, 1, 17, 35, 36} {
		b := bytes.Clone(a)
		b[4*d+1] = 9
		// Rows are equal outside the span, which holds d and at most a
		// pixel more on either side.
		if l, r := span(a, b); l > d || r <= d || r-l > 3 {
			t.Errorf("pixel %d differs: span [%d, %d)", d, l, r)
		}
	}
}

func TestAdlerCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	data := make([]byte, 300000)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, cut := range []int{0, 1, 5552, 65521, 65522, 200000, len(data)} {
		got := adlerCombine(adler32.Checksum(data[:cut]), adler32.Checksum(data[cut:]), len(data)-cut)
		if want := adler32.Checksum(data); got != want {
			t.Errorf("cut at %d: %#x, want %#x", cut, got, want)
		}
	}
}

func TestFrameRGBAAndFromImage(t *testing.T) {
	f := desktop(40, 30, 6)
	rgba := f.RGBA()
	for y := range 30 {
		for x := range 40 {
			if rgba.RGBAAt(x, y) != f.At(x, y) {
				t.Fatalf("RGBA() at (%d, %d) = %v, want %v", x, y, rgba.RGBAAt(x, y), f.At(x, y))
			}
		}
	}
	if g := FromImage(rgba); &g.Pix[0] != &rgba.Pix[0] {
		t.Error("FromImage copied an RGBA image at the origin")
	}
	sub := rgba.SubImage(image.Rect(10, 10, 20, 20))
	g := FromImage(sub)
	if g.Width != 10 || g.Height != 10 || g.At(0, 0) != f.At(10, 10) {
		t.Errorf("FromImage of a sub-image: %dx%d, (0,0) = %v, want 10x10 and %v", g.Width, g.Height, g.At(0, 0), f.At(10, 10))
	}
}

func benchFrames(b *testing.B, change func(f *Frame, i int)) {
	f := desktop(1280, 800, 1)
	var e Encoder
	if _, _, err := e.Encode(f); err != nil {
		b.Fatal(err)
	}
	frames := [2]*Frame{clone(f), clone(f)}
	b.ReportAllocs()
	size := 0
	defer cpuTime(b)()
	for i := 0; b.Loop(); i++ {
		// Like a capture: a fresh copy of the screen, then what changed.
		next := frames[i%2]
		copy(next.Pix, frames[(i+1)%2].Pix)
		change(next, i)
		data, _, err := e.Encode(next)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/1024, "KB")
}

// BenchmarkEncode compares with image/png (BestSpeed) on the same frame.
func BenchmarkEncode(b *testing.B) {
	b.Run("stdlib-png-bestspeed", func(b *testing.B) {
		img := desktop(1280, 800, 1).RGBA()
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		var buf bytes.Buffer
		defer cpuTime(b)()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(&buf, img); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1024, "KB")
	})
	b.Run("every-row-changed", func(b *testing.B) {
		benchFrames(b, func(f *Frame, i int) {
			for y := range f.Height {
				f.Pix[y*f.Stride+4*(i%f.Width)] = byte(i)
			}
		})
	})
	b.Run("a-line-of-text-changed", func(b *testing.B) {
		benchFrames(b, func(f *Frame, i int) {
			y := 300 + (i%20)*12
			for x := 200; x < 900; x++ {
				f.Pix[(y+3)*f.Stride+4*x] = byte(i + x)
			}
		})
	})
}

// TestEncodeTrustsChangesOnlyFromItsLastFrame: a frame that says which
// rows changed since the frame the encoder holds gets only those rows
// compared; one that refers to another frame gets everything compared.
func TestEncodeTrustsChangesOnlyFromItsLastFrame(t *testing.T) {
	var e Encoder
	f := desktop(300, 200, 8)
	f.Seq = 1
	if _, _, err := e.Encode(f); err != nil {
		t.Fatal(err)
	}
	paint := func(g *Frame, y int) {
		for x := 0; x < 50; x++ {
			g.Pix[y*g.Stride+4*x+g.G] ^= 0xff
		}
	}
	// Rows 40 and 150 changed, but the frame says only rows 35-45 did:
	// the encoder believes it (and so shows row 150 as it was).
	g := clone(f)
	g.Seq, g.Changes = 2, &Changes{Since: 1, Rows: []Rows{{35, 45}}}
	paint(g, 40)
	paint(g, 150)
	data, st, err := e.Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	if st.Recompressed != 1 {
		t.Errorf("recompressed %d bands, want the 1 holding rows 35-45", st.Recompressed)
	}
	want := clone(g)
	paint(want, 150)
	decode(t, data, want)
	// A frame whose changes are since a frame the encoder never saw is
	// compared in full.
	h := clone(g)
	h.Seq, h.Changes = 9, &Changes{Since: 7, Rows: nil}
	data, _, err = e.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, data, h)
	// And so is one after an unnumbered frame.
	u := clone(h)
	u.Seq, u.Changes = 0, nil
	e.Encode(u)
	v := clone(u)
	paint(v, 100)
	v.Seq, v.Changes = 10, &Changes{Since: 0, Rows: nil}
	if data, _, err = e.Encode(v); err != nil {
		t.Fatal(err)
	}
	decode(t, data, v)
	// A frame of another size is read whole, whatever it says changed.
	w := desktop(320, 100, 9)
	w.Seq, w.Changes = 11, &Changes{Since: 10, Rows: nil}
	if data, _, err = e.Encode(w); err != nil {
		t.Fatal(err)
	}
	decode(t, data, w)
}

// TestFrameYCbCr: luma matches image/color's conversion exactly, chroma
// that of each 2×2 block's average colour within rounding.
func TestFrameYCbCr(t *testing.T) {
	for _, size := range []image.Point{{1, 1}, {3, 5}, {64, 33}} {
		f := desktop(size.X, size.Y, 11)
		rng := rand.New(rand.NewPCG(2, 2))
		for y := range f.Height { // colourful pixels, not just the desktop's greys
			for x := range f.Width {
				if rng.IntN(2) == 0 {
					p := f.Pix[y*f.Stride+4*x:]
					p[0], p[1], p[2] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
				}
			}
		}
		img := f.YCbCr()
		for y := range f.Height {
			for x := range f.Width {
				c := f.At(x, y).(color.RGBA)
				if want, _, _ := color.RGBToYCbCr(c.R, c.G, c.B); img.Y[img.YOffset(x, y)] != want {
					t.Fatalf("%v: Y at (%d, %d) = %d, want %d", size, x, y, img.Y[img.YOffset(x, y)], want)
				}
				if x%2 != 0 || y%2 != 0 {
					continue
				}
				var r, g, b int
				for _, d := range []image.Point{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
					c := f.At(min(x+d.X, f.Width-1), min(y+d.Y, f.Height-1)).(color.RGBA)
					r, g, b = r+int(c.R), g+int(c.G), b+int(c.B)
				}
				_, wcb, wcr := color.RGBToYCbCr(uint8((r+2)/4), uint8((g+2)/4), uint8((b+2)/4))
				o := img.COffset(x, y)
				if d1, d2 := int(img.Cb[o])-int(wcb), int(img.Cr[o])-int(wcr); d1 < -1 || d1 > 1 || d2 < -1 || d2 > 1 {
					t.Fatalf("%v: Cb, Cr at (%d, %d) = %d, %d, want %d, %d", size, x, y, img.Cb[o], img.Cr[o], wcb, wcr)
				}
			}
		}
	}
}

// cpuTime reports the CPU time the benchmark's process takes per
// iteration from now on (as "cpu-ms/op"), which a loaded machine skews
// less than the wall time: call it after the setup, and the function it
// returns after the loop.
func cpuTime(b *testing.B) func() {
	used := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			b.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	start := used()
	return func() {
		b.ReportMetric(float64(used()-start)/float64(b.N)/1e6, "cpu-ms/op")
	}
}
