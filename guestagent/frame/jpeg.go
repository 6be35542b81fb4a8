package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"
)

// mcuRows is the height of a JPEG band: one row of 4:2:0 MCUs (16×16
// pixels), the least a restart interval can hold.
const mcuRows = 16

// JPEGEncoder encodes frames as baseline 4:2:0 JPEGs with image/jpeg, in
// bands of 16 rows that are each a restart interval: a band's compressed
// bytes do not depend on the others (the DC predictions start anew), so
// the bands whose rows did not change since the encoder's last frame are
// reused as they were compressed, and the others are converted and
// compressed in parallel. The zero value is ready to use; it is safe for
// concurrent use (one Encode at a time).
type JPEGEncoder struct {
	mu sync.Mutex
	// w, h and quality are those of the last frame (0: none), seq its
	// Seq (0: none, or unnumbered).
	w, h, quality int
	seq           uint64
	ycc           *image.YCbCr
	header        []byte   // SOI to the end of SOS, with the full height and a DRI
	bands         [][]byte // each band's entropy-coded bytes
}

// Encode returns f as a JPEG of the given quality (1-100). log, when not
// nil, tells which rows of f changed since the encoder's last frame (it
// should have seen that frame and f); without it, f.Changes is used when
// it is since that frame. Bands neither vouches for are encoded anew.
func (e *JPEGEncoder) Encode(f *Frame, quality int, log *Changelog) ([]byte, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := (f.Height + mcuRows - 1) / mcuRows
	fresh := e.w != f.Width || e.h != f.Height || e.quality != quality
	if fresh {
		e.w, e.h, e.quality = f.Width, f.Height, quality
		e.ycc = image.NewYCbCr(f.Bounds(), image.YCbCrSubsampleRatio420)
		e.header = nil
		e.bands = make([][]byte, n)
		e.seq = 0
	}
	ch := changesSince(e.seq, f, log)
	e.seq = 0 // until the bands hold f
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		y0, y1 := i*mcuRows, min((i+1)*mcuRows, f.Height)
		if ch != nil && e.bands[i] != nil && !ch.touches(y0, y1) {
			continue
		}
		g.Go(func() error {
			yCbCrRows(e.ycc, f, y0, y1)
			var err error
			e.bands[i], err = e.band(i, y0, y1)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		e.w = 0 // start over next time
		return nil, err
	}
	e.seq = f.Seq
	size := len(e.header) + 2*n
	for _, b := range e.bands {
		size += len(b)
	}
	out := make([]byte, 0, size)
	out = append(out, e.header...)
	for i, b := range e.bands {
		out = append(out, b...)
		if i < n-1 {
			out = append(out, 0xff, 0xd0+byte(i%8)) // RSTm, m counting 0-7
		}
	}
	return append(out, 0xff, 0xd9), nil // EOI
}

// flushBuffer is a bytes.Buffer that image/jpeg writes to directly (it
// wants a Flush, else it wraps the writer in a bufio.Writer).
type flushBuffer struct{ bytes.Buffer }

func (flushBuffer) Flush() error { return nil }

// band compresses rows [y0, y1) of the converted frame as band i and
// returns its entropy-coded bytes; band 0 also sets the header, once a
// frame size.
func (e *JPEGEncoder) band(i, y0, y1 int) ([]byte, error) {
	var buf flushBuffer
	buf.Grow(e.w * (y1 - y0) / 2)
	if err := jpeg.Encode(&buf, e.ycc.SubImage(image.Rect(0, y0, e.w, y1)), &jpeg.Options{Quality: e.quality}); err != nil {
		return nil, fmt.Errorf("encode rows %d-%d: %w", y0, y1, err)
	}
	data := buf.Bytes()
	sos, ecs, err := scanStart(data)
	if err != nil {
		return nil, fmt.Errorf("rows %d-%d: %w", y0, y1, err)
	}
	if i == 0 && e.header == nil {
		e.header = fullHeader(data[:sos], data[sos:ecs], e.h, (e.w+mcuRows-1)/mcuRows)
	}
	return bytes.Clone(data[ecs : len(data)-2]), nil // up to EOI
}

// scanStart walks the marker segments of a JPEG that image/jpeg wrote
// and returns where its SOS segment starts and where the entropy-coded
// data after it starts.
func scanStart(data []byte) (sos, ecs int, err error) {
	if len(data) < 4 || data[0] != 0xff || data[1] != 0xd8 || data[len(data)-2] != 0xff || data[len(data)-1] != 0xd9 {
		return 0, 0, errors.New("image/jpeg wrote no SOI and EOI")
	}
	for p := 2; p+4 <= len(data); {
		if data[p] != 0xff {
			return 0, 0, fmt.Errorf("no marker at byte %d", p)
		}
		end := p + 2 + int(binary.BigEndian.Uint16(data[p+2:]))
		if data[p+1] == 0xda {
			return p, end, nil
		}
		p = end
	}
	return 0, 0, errors.New("image/jpeg wrote no SOS")
}

// fullHeader turns the headers of a band's JPEG (SOI to SOS, then SOS)
// into those of the whole frame: SOF0's height set to h, and a DRI for a
// restart interval of mcus MCUs, one band.
func fullHeader(head, sos []byte, h, mcus int) []byte {
	out := make([]byte, 0, len(head)+6+len(sos))
	out = append(out, head...)
	for p := 2; p+4 <= len(out); p += 2 + int(binary.BigEndian.Uint16(out[p+2:])) {
		if out[p+1] == 0xc0 { // SOF0: length, precision, height, width
			binary.BigEndian.PutUint16(out[p+5:], uint16(h))
		}
	}
	out = append(out, 0xff, 0xdd, 0, 4)
	out = binary.BigEndian.AppendUint16(out, uint16(mcus))
	return append(out, sos...)
}
