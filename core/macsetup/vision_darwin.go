package macsetup

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework Foundation -framework CoreGraphics -framework Vision
#include <stdlib.h>
#include "vision_darwin.h"
*/
import "C"

import (
	"context"
	"errors"
	"image"
	"image/draw"
	"math"
	"unsafe"
)

// VisionReader reads a screen's text with Apple's Vision framework
// (VNRecognizeTextRequest, accurate, English), as cirruslabs' Packer
// plugin does to wait for a screen.
type VisionReader struct{}

var _ Reader = VisionReader{}

// Read implements Reader. Boxes are in the image's pixels, origin top left.
func (VisionReader) Read(ctx context.Context, src image.Image) ([]Text, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	img, ok := src.(*image.RGBA)
	if !ok || img.Bounds().Min != (image.Point{}) {
		img = image.NewRGBA(image.Rect(0, 0, src.Bounds().Dx(), src.Bounds().Dy()))
		draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	}
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	if w == 0 || h == 0 {
		return nil, nil
	}
	var lines *C.hc_text
	var n C.int
	if msg := C.hc_read_text((*C.uint8_t)(unsafe.Pointer(&img.Pix[0])), C.int(w), C.int(h), C.int(img.Stride), &lines, &n); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return nil, errors.New("read the screen's text: " + C.GoString(msg))
	}
	defer C.free(unsafe.Pointer(lines))
	out := make([]Text, 0, int(n))
	for _, l := range unsafe.Slice(lines, int(n)) {
		text := C.GoString(l.text)
		C.free(unsafe.Pointer(l.text))
		x0 := int(math.Round(float64(l.x) * float64(w)))
		x1 := int(math.Round(float64(l.x+l.w) * float64(w)))
		// Vision's origin is the bottom left.
		y0 := int(math.Round((1 - float64(l.y+l.h)) * float64(h)))
		y1 := int(math.Round((1 - float64(l.y)) * float64(h)))
		out = append(out, Text{String: text, Box: image.Rect(x0, y0, x1, y1)})
	}
	return out, nil
}
