// Package frame holds a captured screen in the pixel layout the display
// gave (no conversion on capture) and encodes it to PNG quickly: rows are
// filtered and converted in one pass, and an Encoder compresses the screen
// in horizontal bands, recompressing only the bands whose pixels changed
// since its last frame; a Scaler downsizes frames the same way, rescaling
// only the rows that changed (a Changelog tells it what changed across
// frames it did not see). Screens change little between two steps of an
// agent (a typed word, a menu), so most of a screenshot is reused.
package frame

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
)

// Frame is an opaque screen image with 4 bytes per pixel. R, G and B are
// the byte offsets of the channels within a pixel; the fourth byte is
// ignored (X servers leave it as padding, macOS as opaque alpha).
type Frame struct {
	Pix           []byte
	Stride        int
	Width, Height int
	R, G, B       int
	// Release, when set, must be called once Pix is no longer read: the
	// frame borrows memory (a capture's shared-memory segment) that the
	// next capture waits for.
	Release func()
	// Seq numbers the frames of one source (0: unnumbered), and Changes,
	// when set, says which rows can differ from that source's frame
	// Changes.Since: the rest are the same.
	Seq     uint64
	Changes *Changes
}

// Changes lists the rows of a frame that can differ from an earlier frame
// of the same source.
type Changes struct {
	Since uint64
	Rows  []Rows // sorted, not overlapping
}

// Rows are the rows [Y0, Y1).
type Rows struct{ Y0, Y1 int }

// touches reports whether any of the changed rows is in [y0, y1).
func (c *Changes) touches(y0, y1 int) bool {
	for _, r := range c.Rows {
		if r.Y0 < y1 && y0 < r.Y1 {
			return true
		}
	}
	return false
}

var _ image.Image = (*Frame)(nil)

// Check reports a frame whose fields do not describe its buffer.
func (f *Frame) Check() error {
	switch {
	case f.Width <= 0 || f.Height <= 0:
		return fmt.Errorf("frame is %dx%d", f.Width, f.Height)
	case f.Stride < 4*f.Width:
		return fmt.Errorf("frame stride %d is less than 4 × width %d", f.Stride, f.Width)
	case len(f.Pix) < (f.Height-1)*f.Stride+4*f.Width:
		return fmt.Errorf("frame has %d bytes, want %d for %dx%d", len(f.Pix), (f.Height-1)*f.Stride+4*f.Width, f.Width, f.Height)
	}
	for _, o := range []int{f.R, f.G, f.B} {
		if o < 0 || o > 3 {
			return fmt.Errorf("frame channel offset %d is outside a 4-byte pixel", o)
		}
	}
	return nil
}

// ColorModel implements image.Image.
func (f *Frame) ColorModel() color.Model { return color.RGBAModel }

// Bounds implements image.Image.
func (f *Frame) Bounds() image.Rectangle { return image.Rect(0, 0, f.Width, f.Height) }

// At implements image.Image; it is slow, for generic code only.
func (f *Frame) At(x, y int) color.Color {
	if x < 0 || y < 0 || x >= f.Width || y >= f.Height {
		return color.RGBA{}
	}
	p := f.Pix[y*f.Stride+4*x:]
	return color.RGBA{R: p[f.R], G: p[f.G], B: p[f.B], A: 0xff}
}

// RGBA converts the frame into a new opaque RGBA image (for scaling and
// JPEG, whose fast paths want one).
func (f *Frame) RGBA() *image.RGBA {
	img := image.NewRGBA(f.Bounds())
	for y := range f.Height {
		src := f.Pix[y*f.Stride : y*f.Stride+4*f.Width]
		dst := img.Pix[y*img.Stride : y*img.Stride+4*f.Width]
		for i := 0; i+3 < len(src) && i+3 < len(dst); i += 4 {
			dst[i], dst[i+1], dst[i+2], dst[i+3] = src[i+f.R], src[i+f.G], src[i+f.B], 0xff
		}
	}
	return img
}

// FromImage returns img as a frame: an *image.RGBA at the origin is used
// as it is (its alpha is dropped: screens are opaque), anything else is
// drawn into a new one first.
func FromImage(img image.Image) *Frame {
	if f, ok := img.(*Frame); ok {
		return f
	}
	rgba, ok := img.(*image.RGBA)
	if !ok || rgba.Rect.Min != (image.Point{}) {
		rgba = image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
		draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	}
	return &Frame{Pix: rgba.Pix, Stride: rgba.Stride, Width: rgba.Rect.Dx(), Height: rgba.Rect.Dy(), R: 0, G: 1, B: 2}
}

// YCbCr converts the frame into a new 4:2:0 YCbCr image, what JPEG stores
// (image/jpeg would otherwise convert an RGBA image block by block, more
// slowly). Chroma is taken from the average of each 2×2 block of pixels.
func (f *Frame) YCbCr() *image.YCbCr {
	img := image.NewYCbCr(f.Bounds(), image.YCbCrSubsampleRatio420)
	yCbCrRows(img, f, 0, f.Height)
	return img
}

// yCbCrRows converts rows [y0, y1) of f into img, a 4:2:0 image of f's
// size; y0 is even.
func yCbCrRows(img *image.YCbCr, f *Frame, y0, y1 int) {
	for y := y0; y < y1; y++ {
		src := f.Pix[y*f.Stride : y*f.Stride+4*f.Width]
		dst := img.Y[y*img.YStride : y*img.YStride+f.Width]
		for x := range dst {
			p := src[4*x : 4*x+4 : 4*x+4]
			r, g, b := int32(p[f.R]), int32(p[f.G]), int32(p[f.B])
			dst[x] = uint8((19595*r + 38470*g + 7471*b + 1<<15) >> 16)
		}
	}
	for cy := y0 / 2; cy < (y1+1)/2; cy++ {
		r0, r1 := 2*cy, min(2*cy+1, f.Height-1)
		row0, row1 := f.Pix[r0*f.Stride:], f.Pix[r1*f.Stride:]
		cb := img.Cb[cy*img.CStride : cy*img.CStride+(f.Width+1)/2]
		cr := img.Cr[cy*img.CStride : cy*img.CStride+(f.Width+1)/2]
		for cx := range cb {
			x0, x1 := 4*2*cx, 4*min(2*cx+1, f.Width-1)
			r := int32(row0[x0+f.R]) + int32(row0[x1+f.R]) + int32(row1[x0+f.R]) + int32(row1[x1+f.R])
			g := int32(row0[x0+f.G]) + int32(row0[x1+f.G]) + int32(row1[x0+f.G]) + int32(row1[x1+f.G])
			b := int32(row0[x0+f.B]) + int32(row0[x1+f.B]) + int32(row1[x0+f.B]) + int32(row1[x1+f.B])
			// The sums are 4× the average: shift by 2 more.
			cb[cx] = clamp8((-11056*r - 21712*g + 32768*b + 257<<17) >> 18)
			cr[cx] = clamp8((32768*r - 27440*g - 5328*b + 257<<17) >> 18)
		}
	}
}

func clamp8(v int32) uint8 {
	return uint8(min(max(v, 0), 255))
}
