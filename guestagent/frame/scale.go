package frame

import "sync"

// Scaler downsizes frames with bilinear filtering, mapping pixels as
// golang.org/x/image/draw's ApproxBiLinear does (its output within a
// level or two of it), in integer arithmetic and straight from the
// capture's pixel layout. It keeps the last frame it made, and when the
// source says which rows changed since the frame that one was made from
// (Changes, or a Changelog), it rescales only the rows those feed: an
// agent's step that types a word rescales a sliver of the screen.
//
// The zero value is ready to use; it is safe for concurrent use (one
// frame at a time: Scale waits until the previous frame is released).
type Scaler struct {
	mu sync.Mutex
	// out is the scaled frame, RGBA layout, rows packed.
	out Frame
	// src is the geometry of the source out was made from, and srcSeq
	// its Seq (0: none, or unnumbered: the next frame is scaled whole).
	srcW, srcH, r, g, b int
	srcSeq              uint64
	xs                  []tap // per column of out
	ys                  []tap // per row of out
	dirty               []bool
	h0, h1              []uint16 // the two source rows a row of out blends, scaled across
	h0y, h1y            int      // the source rows h0 and h1 hold (-1: none)
}

// tap is where an output pixel's value comes from along one axis: the
// source pixels i0 and i1 (adjacent, or equal at the edges), i1 weighing
// w/256.
type tap struct {
	i0, i1 int
	w      uint32
}

// taps maps n output pixels onto src source pixels as ApproxBiLinear
// does: centre to centre, clamped at the edges.
func taps(n, src int) []tap {
	t := make([]tap, n)
	scale := float64(src) / float64(n)
	for d := range t {
		s := (float64(d)+0.5)*scale - 0.5
		i0 := int(s) // truncation: s < 0 is clamped below anyway
		frac := s - float64(i0)
		switch {
		case s < 0:
			t[d] = tap{0, 0, 0}
		case i0+1 > src-1:
			t[d] = tap{src - 1, src - 1, 0}
		default:
			t[d] = tap{i0, i0 + 1, uint32(frac*256 + 0.5)}
		}
	}
	return t
}

// Scale returns f, which passes Check, scaled to w×h (each at least 1).
// The frame is the scaler's own: it must be released, and not read after
// that. Its Seq numbers the scaler's frames and its Changes, when set,
// says which of its rows were rescaled since the scaler's previous frame.
//
// log, when not nil, tells which rows of f changed since the source frame
// the scaler last scaled (it should have seen that frame and f); without
// it, f.Changes is used. Whatever neither vouches for is rescaled whole.
func (s *Scaler) Scale(f *Frame, w, h int, log *Changelog) *Frame {
	s.mu.Lock()
	o := &s.out
	fresh := o.Width != w || o.Height != h || s.srcW != f.Width || s.srcH != f.Height ||
		s.r != f.R || s.g != f.G || s.b != f.B
	if fresh {
		// Seq goes on counting: an encoder never takes this frame for one
		// of another size or source.
		*o = Frame{Pix: make([]byte, 4*w*h), Stride: 4 * w, Width: w, Height: h, R: 0, G: 1, B: 2, Seq: o.Seq}
		s.srcW, s.srcH, s.r, s.g, s.b = f.Width, f.Height, f.R, f.G, f.B
		s.xs, s.ys = taps(w, f.Width), taps(h, f.Height)
		s.dirty = make([]bool, f.Height)
		s.h0, s.h1 = make([]uint16, 3*w), make([]uint16, 3*w)
		s.srcSeq = 0
	}
	ch := changesSince(s.srcSeq, f, log) // nil when fresh: srcSeq is 0
	s.h0y, s.h1y = -1, -1
	prev := o.Seq
	o.Seq++
	o.Changes = nil
	if ch == nil {
		for y := range h {
			s.row(f, y)
		}
	} else {
		o.Changes = &Changes{Since: prev, Rows: s.rescale(f, ch)}
	}
	s.srcSeq = f.Seq
	g := *o
	g.Release = sync.OnceFunc(s.mu.Unlock)
	return &g
}

// rescale rescales the rows of out that read a changed row of f and
// returns them.
func (s *Scaler) rescale(f *Frame, ch *Changes) []Rows {
	clear(s.dirty)
	for _, r := range ch.Rows {
		for y := max(r.Y0, 0); y < min(r.Y1, f.Height); y++ {
			s.dirty[y] = true
		}
	}
	var rows []Rows
	for y, t := range s.ys {
		if !s.dirty[t.i0] && !s.dirty[t.i1] {
			continue
		}
		s.row(f, y)
		if n := len(rows); n > 0 && rows[n-1].Y1 == y {
			rows[n-1].Y1++
		} else {
			rows = append(rows, Rows{Y0: y, Y1: y + 1})
		}
	}
	return rows
}

// row computes row y of out: the two source rows it blends, each scaled
// across (and kept for the next row, which often blends the same), then
// blended down.
func (s *Scaler) row(f *Frame, y int) {
	t := s.ys[y]
	switch {
	case s.h0y == t.i0:
	case s.h1y == t.i0:
		s.h0, s.h1, s.h0y, s.h1y = s.h1, s.h0, s.h1y, s.h0y
	default:
		s.across(s.h0, f, t.i0)
		s.h0y = t.i0
	}
	if s.h1y != t.i1 {
		s.across(s.h1, f, t.i1)
		s.h1y = t.i1
	}
	a, b := s.h0, s.h1
	wa, wb := 256-t.w, t.w
	dst := s.out.Pix[y*s.out.Stride : y*s.out.Stride+4*s.out.Width]
	for x := range s.out.Width {
		p := a[3*x : 3*x+3 : 3*x+3]
		q := b[3*x : 3*x+3 : 3*x+3]
		d := dst[4*x : 4*x+4 : 4*x+4]
		d[0] = uint8((uint32(p[0])*wa + uint32(q[0])*wb) >> 16)
		d[1] = uint8((uint32(p[1])*wa + uint32(q[1])*wb) >> 16)
		d[2] = uint8((uint32(p[2])*wa + uint32(q[2])*wb) >> 16)
		d[3] = 0xff
	}
}

// across scales source row y of f across into h: 3 values a pixel, each
// 256 times the blended channel.
func (s *Scaler) across(h []uint16, f *Frame, y int) {
	src := f.Pix[y*f.Stride : y*f.Stride+4*f.Width]
	r, g, b := f.R, f.G, f.B
	for x, t := range s.xs {
		p := src[4*t.i0 : 4*t.i0+4 : 4*t.i0+4]
		q := src[4*t.i1 : 4*t.i1+4 : 4*t.i1+4]
		wp, wq := 256-t.w, t.w
		d := h[3*x : 3*x+3 : 3*x+3]
		d[0] = uint16(uint32(p[r])*wp + uint32(q[r])*wq)
		d[1] = uint16(uint32(p[g])*wp + uint32(q[g])*wq)
		d[2] = uint16(uint32(p[b])*wp + uint32(q[b])*wq)
	}
}
