package server

import (
	"bytes"
	"image"
	"image/jpeg"

	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// encodeScreenshot downscales img to fit the request and encodes it. PNGs
// go through the server's frame encoder, which recompresses only what
// changed since the last PNG screenshot.
func (s *Server) encodeScreenshot(img image.Image, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	b := img.Bounds()
	w, h := protocol.FitSize(b.Dx(), b.Dy(), p.MaxWidth, p.MaxHeight)
	if w != b.Dx() || h != b.Dy() {
		// The scaler's fast path wants RGBA.
		if f, ok := img.(*frame.Frame); ok {
			img = f.RGBA()
		}
	}
	if w != b.Dx() || h != b.Dy() {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		img = dst
	}
	if p.Format == protocol.FormatJPEG {
		q := p.Quality
		if q == 0 {
			q = 80
		}
		var buf bytes.Buffer
		buf.Grow(w * h / 4)
		if err := jpeg.Encode(&buf, frame.FromImage(img).YCbCr(), &jpeg.Options{Quality: q}); err != nil {
			return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInternalError, "encode the screenshot: %v", err)
		}
		return protocol.ScreenshotResult{Format: protocol.FormatJPEG, Width: w, Height: h, Data: buf.Bytes()}, nil
	}
	data, _, err := s.png.Encode(frame.FromImage(img))
	if err != nil {
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInternalError, "encode the screenshot: %v", err)
	}
	return protocol.ScreenshotResult{Format: protocol.FormatPNG, Width: w, Height: h, Data: data}, nil
}
