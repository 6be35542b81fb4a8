package frame

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
)

// bandRows is the height of a band: small enough that a typed word
// recompresses a sliver of the screen, tall enough that compressing bands
// apart loses little (deflate looks back 32 KB, about 8 rows of a
// 1280-pixel screen).
const bandRows = 16

// Filter types of PNG rows (RFC 2083 section 6).
const (
	filterNone  = 0
	filterSub   = 1
	filterUp    = 2
	filterPaeth = 4
)

// band is one compressed band of rows.
type band struct {
	// z holds deflate blocks that end with a sync flush and reference
	// nothing outside the band, so bands can be concatenated in any mix.
	z     []byte
	adler uint32 // Adler-32 of the band's filtered bytes
	n     int    // how many filtered bytes
}

// Encoder encodes frames as 8-bit RGB PNGs. It keeps a copy of the last
// frame it encoded and reuses the compressed bands whose rows (and the row
// above each, which the filters read) are unchanged; the bands that
// changed are compressed in parallel (GOMAXPROCS at once). The zero value
// is ready to use; it is safe for concurrent use (one Encode at a time).
type Encoder struct {
	// mu guards everything below.
	mu sync.Mutex
	// last holds the pixels of the last frame, rows packed (Stride is
	// 4 × Width); Encode updates the rows that changed in place.
	last Frame
	// seq is the Seq of the frame last holds (0: none, or unnumbered).
	seq   uint64
	bands []band
	// idle holds the compressors not in use, one for each band that can
	// be compressed at once (GOMAXPROCS).
	idle chan *compressor
}

// compressor is what compressing a band takes.
type compressor struct {
	zw   *flate.Writer
	zbuf bytes.Buffer
	rows []byte // a band's filtered rows, each led by its filter type
	cur  []byte // RGB of the row being filtered
	up   []byte // RGB of the row above it
}

// Stats says how much of a frame was compressed anew.
type Stats struct {
	Bands        int // bands in the frame
	Recompressed int // bands that changed (all of them for a first frame)
}

// Encode returns f as a PNG. It does not keep f. When f says which rows
// changed since the frame the encoder holds, it compares no other row.
func (e *Encoder) Encode(f *Frame) ([]byte, Stats, error) {
	if err := f.Check(); err != nil {
		return nil, Stats{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.idle == nil {
		n := runtime.GOMAXPROCS(0)
		e.idle = make(chan *compressor, n)
		for range n {
			c := &compressor{}
			zw, err := flate.NewWriter(&c.zbuf, flate.BestSpeed)
			if err != nil {
				return nil, Stats{}, err
			}
			c.zw = zw
			e.idle <- c
		}
	}
	n := (f.Height + bandRows - 1) / bandRows
	l := &e.last
	fresh := l.Width != f.Width || l.Height != f.Height || l.R != f.R || l.G != f.G || l.B != f.B
	if fresh {
		*l = Frame{Pix: make([]byte, 4*f.Width*f.Height), Stride: 4 * f.Width, Width: f.Width, Height: f.Height, R: f.R, G: f.G, B: f.B}
		e.bands = make([]band, n)
	}
	hint := !fresh && f.Changes != nil && e.seq != 0 && f.Changes.Since == e.seq
	e.seq = 0 // until last holds f
	st := Stats{Bands: n}
	// First the rows, then the bands that changed, in parallel: a band's
	// filters read the row above it.
	var todo []int
	aboveChanged := false // the last row of the band above changed
	for i := range e.bands {
		y0, y1 := i*bandRows, min((i+1)*bandRows, f.Height)
		changed, lastChanged := false, false
		if !hint || e.bands[i].z == nil || f.Changes.touches(y0, y1) {
			changed, lastChanged = e.update(f, y0, y1)
		}
		if !changed && !aboveChanged && e.bands[i].z != nil {
			continue
		}
		aboveChanged = lastChanged
		todo = append(todo, i)
	}
	var g errgroup.Group
	for _, i := range todo {
		c := <-e.idle
		g.Go(func() error {
			defer func() { e.idle <- c }()
			return e.compress(c, i, i*bandRows, min((i+1)*bandRows, f.Height))
		})
	}
	if err := g.Wait(); err != nil {
		e.last = Frame{} // rows and bands may disagree: start over next time
		return nil, Stats{}, err
	}
	st.Recompressed = len(todo)
	e.seq = f.Seq
	return e.assemble(f.Width, f.Height), st, nil
}

// update copies rows [y0, y1) of f that differ from the last frame into
// it, and reports whether any did and whether row y1-1 did.
func (e *Encoder) update(f *Frame, y0, y1 int) (changed, lastChanged bool) {
	w := 4 * f.Width
	for y := y0; y < y1; y++ {
		src, dst := f.Pix[y*f.Stride:y*f.Stride+w], e.last.Pix[y*w:(y+1)*w]
		if !bytes.Equal(src, dst) {
			copy(dst, src)
			changed, lastChanged = true, y == y1-1
		}
	}
	return changed, lastChanged
}

// compress filters rows [y0, y1) of the last frame and compresses them
// with c as band i.
func (e *Encoder) compress(c *compressor, i, y0, y1 int) error {
	f := &e.last
	w := 3 * f.Width
	if cap(c.cur) < w {
		c.cur, c.up = make([]byte, w), make([]byte, w)
		c.rows = make([]byte, bandRows*(1+w))
	}
	rows := c.rows[:(y1-y0)*(1+w)]
	for y := y0; y < y1; y++ {
		out := rows[(y-y0)*(1+w) : (y-y0+1)*(1+w)]
		e.filter(c, out, y)
	}
	c.zbuf.Reset()
	// Reset forgets the previous band: bands stand alone. compress/flate's
	// fastest level keeps screenshots of text a quarter smaller than
	// github.com/klauspost/compress's, which is a quarter faster: the bytes
	// are sent again with every step, to the LLM too, so size wins.
	c.zw.Reset(&c.zbuf)
	if _, err := c.zw.Write(rows); err != nil {
		return fmt.Errorf("compress band %d: %w", i, err)
	}
	if err := c.zw.Flush(); err != nil {
		return fmt.Errorf("compress band %d: %w", i, err)
	}
	b := &e.bands[i]
	b.z = append(b.z[:0], c.zbuf.Bytes()...)
	b.adler = adler(1, rows)
	b.n = len(rows)
	return nil
}

// filter writes row y of the last frame, filtered and led by its filter
// type, into out. Screens repeat themselves down the rows (backgrounds,
// margins, blank lines), so the row is first compared with the one above:
// where they differ in less than a quarter of the row, the Up filter is
// used, whose output is zero outside the difference and costs nothing to
// make there. Other rows get the filter that looks best on a sample
// (filterRow), which compresses text better.
func (e *Encoder) filter(c *compressor, out []byte, y int) {
	f := &e.last
	if y > 0 {
		row, above := f.Pix[y*f.Stride:(y+1)*f.Stride], f.Pix[(y-1)*f.Stride:y*f.Stride]
		l, r := span(row, above)
		if r-l < f.Width/4 {
			out[0] = filterUp
			px := out[1:]
			clear(px[:3*l])
			clear(px[3*r:])
			for x := l; x < r; x++ {
				p, q := row[4*x:4*x+4:4*x+4], above[4*x:4*x+4:4*x+4]
				d := px[3*x : 3*x+3 : 3*x+3]
				d[0], d[1], d[2] = p[f.R]-q[f.R], p[f.G]-q[f.G], p[f.B]-q[f.B]
			}
			return
		}
	}
	cur, up := c.cur[:3*f.Width], c.up[:3*f.Width]
	rgb(cur, f, y)
	if y > 0 {
		rgb(up, f, y-1)
	}
	filterRow(out, cur, up, y == 0)
}

// span returns the pixels [l, r) outside which rows a and b (4 bytes a
// pixel, as many in each) are equal; l == r when they are equal throughout.
// It compares two pixels at a time, so the span may include one pixel
// more on either side.
func span(a, b []byte) (l, r int) {
	if bytes.Equal(a, b) {
		return 0, 0
	}
	n := len(a) &^ 7 // whole pairs of pixels
	i := 0
	for i < n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	j := len(a)
	for j-8 >= i && binary.LittleEndian.Uint64(a[j-8:]) == binary.LittleEndian.Uint64(b[j-8:]) {
		j -= 8
	}
	return i / 4, (j + 3) / 4
}

// rgb writes row y of f as packed RGB into dst.
func rgb(dst []byte, f *Frame, y int) {
	src := f.Pix[y*f.Stride : y*f.Stride+4*f.Width]
	r, g, b := f.R, f.G, f.B
	for x := 0; x < f.Width; x++ {
		p := src[4*x : 4*x+4 : 4*x+4]
		d := dst[3*x : 3*x+3 : 3*x+3]
		d[0], d[1], d[2] = p[r], p[g], p[b]
	}
}

// filterRow writes cur, filtered and led by its filter type, into out. The
// filter is the one whose output looks smallest on a sample of the row
// (the sum of absolute values, as libpng estimates it), so flat UI keeps
// None or Up and photos and gradients get Sub or Paeth, at a fraction of
// trying every filter.
func filterRow(out, cur, up []byte, first bool) {
	const sample = 8 // pixels between two samples
	ft := filterNone
	if !first {
		var none, sub, upS, paeth int
		for i := 3; i+2 < len(cur); i += 3 * sample {
			for k := i; k < i+3; k++ {
				none += abs(cur[k])
				sub += abs(cur[k] - cur[k-3])
				upS += abs(cur[k] - up[k])
				paeth += abs(cur[k] - predict(cur[k-3], up[k], up[k-3]))
			}
		}
		best := upS
		ft = filterUp
		for _, c := range [...]struct{ sum, ft int }{{none, filterNone}, {sub, filterSub}, {paeth, filterPaeth}} {
			if c.sum < best {
				best, ft = c.sum, c.ft
			}
		}
	}
	out[0] = byte(ft)
	px := out[1 : 1+len(cur)]
	switch ft {
	case filterNone:
		copy(px, cur)
	case filterSub:
		copy(px[:3], cur)
		for i := 3; i < len(px); i++ {
			px[i] = cur[i] - cur[i-3]
		}
	case filterUp:
		up = up[:len(px)]
		for i := range px {
			px[i] = cur[i] - up[i]
		}
	case filterPaeth:
		up = up[:len(px)]
		for i := range 3 {
			px[i] = cur[i] - up[i]
		}
		for i := 3; i < len(px); i++ {
			px[i] = cur[i] - predict(cur[i-3], up[i], up[i-3])
		}
	}
}

// abs is the magnitude of a filtered byte read as a signed difference.
func abs(b byte) int {
	if b < 128 {
		return int(b)
	}
	return 256 - int(b)
}

// predict is the Paeth predictor of the pixel left (a), above (b) and
// above-left (c).
func predict(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := p-int(a), p-int(b), p-int(c)
	if pa < 0 {
		pa = -pa
	}
	if pb < 0 {
		pb = -pb
	}
	if pc < 0 {
		pc = -pc
	}
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

// assemble writes the PNG: signature, IHDR, one IDAT holding a zlib stream
// made of the bands and a final empty block, IEND.
func (e *Encoder) assemble(width, height int) []byte {
	zlen := 2 + 2 + 4 // zlib header, final empty block, Adler-32
	for _, b := range e.bands {
		zlen += len(b.z)
	}
	out := make([]byte, 0, 8+(12+13)+(12+zlen)+12)
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per channel, truecolour; deflate, adaptive filters, no interlace
	out = chunk(out, "IHDR", ihdr[:])

	out = binary.BigEndian.AppendUint32(out, uint32(zlen))
	start := len(out)
	out = append(out, "IDAT"...)
	out = append(out, 0x78, 0x01) // deflate, 32 KB window, fastest
	adler := uint32(1)
	for _, b := range e.bands {
		out = append(out, b.z...)
		adler = adlerCombine(adler, b.adler, b.n)
	}
	out = append(out, 0x03, 0x00) // a final, empty block with fixed codes
	out = binary.BigEndian.AppendUint32(out, adler)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))

	return chunk(out, "IEND", nil)
}

// chunk appends a PNG chunk.
func chunk(out []byte, kind string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, kind...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// adler updates the Adler-32 checksum a with p. It is hash/adler32's sum,
// with a shortcut for runs of zeros (which filtered screens are full of):
// a zero byte adds nothing to the first sum and the first sum to the second.
func adler(a uint32, p []byte) uint32 {
	const (
		mod  = 65521
		nmax = 5552 // the most bytes before the second sum could overflow 32 bits
	)
	s1, s2 := a&0xffff, a>>16
	for len(p) > 0 {
		q := p[:min(len(p), nmax)]
		p = p[len(q):]
		for len(q) >= 8 {
			if binary.LittleEndian.Uint64(q) == 0 {
				s2 += 8 * s1
			} else {
				for _, c := range q[:8] {
					s1 += uint32(c)
					s2 += s1
				}
			}
			q = q[8:]
		}
		for _, c := range q {
			s1 += uint32(c)
			s2 += s1
		}
		s1 %= mod
		s2 %= mod
	}
	return s2<<16 | s1
}

// adlerCombine returns the Adler-32 of x followed by y from the checksums
// of x and y and the length of y. With A and B the two sums of a checksum:
// A(xy) = A(x) + A(y) - 1 and B(xy) = B(x) + B(y) + len(y)·(A(x) - 1),
// modulo 65521.
func adlerCombine(x, y uint32, ylen int) uint32 {
	const mod = 65521
	ax, bx := uint64(x&0xffff), uint64(x>>16)
	ay, by := uint64(y&0xffff), uint64(y>>16)
	n := uint64(ylen) % mod
	a := (ax + ay + mod - 1) % mod
	b := (bx + by + n*((ax+mod-1)%mod)) % mod
	return uint32(b<<16 | a)
}
