package server

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// FitSize returns the largest size with w:h's aspect ratio that fits in
// maxW x maxH (a zero bound is no bound), never larger than w x h.
func FitSize(w, h, maxW, maxH int) (int, int) {
	scale := 1.0
	if maxW > 0 && w > maxW {
		scale = float64(maxW) / float64(w)
	}
	if maxH > 0 && h > maxH && float64(maxH)/float64(h) < scale {
		scale = float64(maxH) / float64(h)
	}
	if scale == 1 {
		return w, h
	}
	return max(1, int(float64(w)*scale+0.5)), max(1, int(float64(h)*scale+0.5))
}

// pngEncoder trades a little size for speed: screenshots are taken every step.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// encodeScreenshot downscales img to fit the request and encodes it.
func encodeScreenshot(img image.Image, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	b := img.Bounds()
	w, h := FitSize(b.Dx(), b.Dy(), p.MaxWidth, p.MaxHeight)
	if w != b.Dx() || h != b.Dy() {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		img = dst
	}
	var buf bytes.Buffer
	buf.Grow(w * h / 2)
	format := p.Format
	switch format {
	case "", protocol.FormatPNG:
		format = protocol.FormatPNG
		if err := pngEncoder.Encode(&buf, img); err != nil {
			return protocol.ScreenshotResult{}, err
		}
	case protocol.FormatJPEG:
		q := p.Quality
		if q == 0 {
			q = 80
		}
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
			return protocol.ScreenshotResult{}, err
		}
	}
	return protocol.ScreenshotResult{Format: format, Width: w, Height: h, Data: buf.Bytes()}, nil
}
