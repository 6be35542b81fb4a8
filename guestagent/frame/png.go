package frame

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"sync"

	"github.com/klauspost/compress/flate"
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

// Encoder encodes frames as 8-bit RGB PNGs. It keeps the last frame it
// encoded and reuses the compressed bands whose rows (and the row above
// each, which the filters read) are unchanged. The zero value is ready to
// use; it is safe for concurrent use (one Encode at a time).
type Encoder struct {
	// mu guards everything below.
	mu    sync.Mutex
	prev  *Frame
	bands []band
	zw    *flate.Writer
	zbuf  bytes.Buffer
	rows  []byte // a band's filtered rows, each led by its filter type
	cur   []byte // RGB of the row being filtered
	up    []byte // RGB of the row above it
}

// Stats says how much of a frame was compressed anew.
type Stats struct {
	Bands        int // bands in the frame
	Recompressed int // bands that changed (all of them for a first frame)
}

// Encode returns f as a PNG. The encoder keeps f to compare the next frame
// with, so the caller must not change f's pixels afterwards.
func (e *Encoder) Encode(f *Frame) ([]byte, Stats, error) {
	if err := f.Check(); err != nil {
		return nil, Stats{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.zw == nil {
		zw, err := flate.NewWriter(&e.zbuf, flate.BestSpeed)
		if err != nil {
			return nil, Stats{}, err
		}
		e.zw = zw
	}
	n := (f.Height + bandRows - 1) / bandRows
	comparable := e.prev != nil && e.prev.Width == f.Width && e.prev.Height == f.Height &&
		e.prev.R == f.R && e.prev.G == f.G && e.prev.B == f.B && len(e.bands) == n
	if !comparable {
		e.bands = make([]band, n)
	}
	st := Stats{Bands: n}
	for i := range e.bands {
		y0, y1 := i*bandRows, min((i+1)*bandRows, f.Height)
		if comparable && e.bands[i].z != nil && sameRows(e.prev, f, max(y0-1, 0), y1) {
			continue
		}
		if err := e.compress(f, i, y0, y1); err != nil {
			return nil, Stats{}, err
		}
		st.Recompressed++
	}
	e.prev = f
	return e.assemble(f.Width, f.Height), st, nil
}

// sameRows reports whether rows [y0, y1) of a and b have the same pixels.
func sameRows(a, b *Frame, y0, y1 int) bool {
	w := 4 * a.Width
	for y := y0; y < y1; y++ {
		if !bytes.Equal(a.Pix[y*a.Stride:y*a.Stride+w], b.Pix[y*b.Stride:y*b.Stride+w]) {
			return false
		}
	}
	return true
}

// compress filters rows [y0, y1) of f and compresses them as band i.
func (e *Encoder) compress(f *Frame, i, y0, y1 int) error {
	w := 3 * f.Width
	if cap(e.cur) < w {
		e.cur, e.up = make([]byte, w), make([]byte, w)
		e.rows = make([]byte, 0, bandRows*(1+w))
	}
	cur, up := e.cur[:w], e.up[:w]
	if y0 > 0 {
		rgb(up, f, y0-1)
	} else {
		clear(up)
	}
	rows := e.rows[:0]
	for y := y0; y < y1; y++ {
		rgb(cur, f, y)
		rows = filterRow(rows, cur, up, y == 0)
		cur, up = up, cur
	}
	e.rows = rows
	e.zbuf.Reset()
	e.zw.Reset(&e.zbuf) // forget the previous band: bands stand alone
	if _, err := e.zw.Write(rows); err != nil {
		return fmt.Errorf("compress band %d: %w", i, err)
	}
	if err := e.zw.Flush(); err != nil {
		return fmt.Errorf("compress band %d: %w", i, err)
	}
	b := &e.bands[i]
	b.z = append(b.z[:0], e.zbuf.Bytes()...)
	b.adler = adler32.Checksum(rows)
	b.n = len(rows)
	return nil
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

// filterRow appends cur, filtered, to rows. The filter is the one whose
// output looks smallest on a sample of the row (the sum of absolute
// values, as libpng estimates it), so flat UI keeps None or Up and photos
// and gradients get Sub or Paeth, at a fraction of trying every filter.
func filterRow(rows, cur, up []byte, first bool) []byte {
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
	start := len(rows)
	rows = append(rows, byte(ft))
	rows = append(rows, cur...)
	out := rows[start+1:]
	out = out[:len(cur)]
	switch ft {
	case filterSub:
		for i := len(cur) - 1; i >= 3; i-- {
			out[i] = cur[i] - cur[i-3]
		}
	case filterUp:
		up = up[:len(out)]
		for i := range out {
			out[i] = cur[i] - up[i]
		}
	case filterPaeth:
		up = up[:len(out)]
		for i := range 3 {
			out[i] = cur[i] - up[i]
		}
		for i := 3; i < len(out); i++ {
			out[i] = cur[i] - predict(cur[i-3], up[i], up[i-3])
		}
	}
	return rows
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
