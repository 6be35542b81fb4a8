package server

import (
	"image"

	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// encodeScreenshot downscales img to fit the request and encodes it. The
// scalers rescale, and the encoders recompress, only what changed since
// their last frame.
func (s *Server) encodeScreenshot(img image.Image, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	f := frame.FromImage(img)
	if err := f.Check(); err != nil {
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInternalError, "screen image: %v", err)
	}
	s.changes.Add(f)
	w, h := protocol.FitSize(f.Width, f.Height, p.MaxWidth, p.MaxHeight)
	scaled := w != f.Width || h != f.Height
	if scaled {
		sc := &s.pngScale
		if p.Format == protocol.FormatJPEG {
			sc = &s.jpegScale
		}
		f = sc.Scale(f, w, h, &s.changes)
		defer f.Release()
	}
	if p.Format == protocol.FormatJPEG {
		q := p.Quality
		if q == 0 {
			q = 80
		}
		// A scaled frame says what changed since the scaler's previous
		// one, which went to the same encoder.
		enc, log := &s.jpeg, &s.changes
		if scaled {
			enc, log = &s.scaledJPEG, nil
		}
		data, err := enc.Encode(f, q, log)
		if err != nil {
			return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInternalError, "encode the screenshot: %v", err)
		}
		return protocol.ScreenshotResult{Format: protocol.FormatJPEG, Width: w, Height: h, Data: data}, nil
	}
	enc := &s.png
	if scaled {
		enc = &s.scaledPNG
	}
	data, _, err := enc.Encode(f)
	if err != nil {
		return protocol.ScreenshotResult{}, protocol.Errorf(protocol.CodeInternalError, "encode the screenshot: %v", err)
	}
	return protocol.ScreenshotResult{Format: protocol.FormatPNG, Width: w, Height: h, Data: data}, nil
}
