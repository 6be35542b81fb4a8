package server

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// pngEncoder trades a little size for speed: screenshots are taken every step.
var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

// encodeScreenshot downscales img to fit the request and encodes it.
func encodeScreenshot(img image.Image, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	b := img.Bounds()
	w, h := protocol.FitSize(b.Dx(), b.Dy(), p.MaxWidth, p.MaxHeight)
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
