package documents

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// MaxImagePixels bounds the pixels of an image file read_document decodes
// (a 100-megapixel photo is the largest a camera takes): its header is
// read first, and a larger one is refused before it is decoded.
const MaxImagePixels = 100_000_000

// jpegQualities are tried in turn until an image fits
// protocol.MaxDocumentImageBytes.
var jpegQualities = []int{85, 70, 50}

// config reads an image's header.
func config(data []byte, f Format) (image.Config, error) {
	r := bytes.NewReader(data)
	switch f {
	case PNG:
		return png.DecodeConfig(r)
	case JPEG:
		return jpeg.DecodeConfig(r)
	case GIF:
		return gif.DecodeConfig(r)
	case WebP:
		return webp.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("no decoder for %s", f)
}

func decode(data []byte, f Format) (image.Image, error) {
	r := bytes.NewReader(data)
	switch f {
	case PNG:
		return png.Decode(r)
	case JPEG:
		return jpeg.Decode(r)
	case GIF:
		return gif.Decode(r) // the first frame
	case WebP:
		return webp.Decode(r)
	}
	return nil, fmt.Errorf("no decoder for %s", f)
}

// Size returns an image's pixels from its header, refusing one that does
// not decode or is over MaxImagePixels.
func Size(data []byte, f Format, name string) (int, int, error) {
	cfg, err := config(data, f)
	if err != nil {
		return 0, 0, protocol.Errorf(protocol.CodeUnsupported, "%s is not a readable %s image: %v", name, f, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return 0, 0, protocol.Errorf(protocol.CodeTooLarge, "%s is a %dx%d image, over the %d pixels read_file decodes", name, cfg.Width, cfg.Height, MaxImagePixels)
	}
	return cfg.Width, cfg.Height, nil
}

// Fit decodes an image file (PNG, JPEG, GIF or WebP; its size checked
// with Size first), scales it down to fit maxW x maxH, and encodes it as
// a PNG when the file was a PNG or GIF that fits as one, else as a JPEG,
// within protocol.MaxDocumentImageBytes.
func Fit(data []byte, f Format, name string, maxW, maxH int) (*protocol.DocumentImage, error) {
	if _, _, err := Size(data, f, name); err != nil {
		return nil, err
	}
	img, err := decode(data, f)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnsupported, "%s is not a readable %s image: %v", name, f, err)
	}
	b := img.Bounds()
	w, h := protocol.FitSize(b.Dx(), b.Dy(), maxW, maxH)
	if w != b.Dx() || h != b.Dy() {
		dst := image.NewRGBA(image.Rect(0, 0, max(w, 1), max(h, 1)))
		xdraw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		img = dst
	}
	w, h = img.Bounds().Dx(), img.Bounds().Dy()
	if f == PNG || f == GIF {
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err == nil && buf.Len() <= protocol.MaxDocumentImageBytes {
			return &protocol.DocumentImage{Format: protocol.FormatPNG, Width: w, Height: h, Data: buf.Bytes()}, nil
		}
	}
	// JPEG has no transparency: what was transparent shows white.
	flat := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(flat, flat.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(flat, flat.Bounds(), img, img.Bounds().Min, draw.Over)
	for _, q := range jpegQualities {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, flat, &jpeg.Options{Quality: q}); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternalError, "encode %s: %v", name, err)
		}
		if buf.Len() <= protocol.MaxDocumentImageBytes {
			return &protocol.DocumentImage{Format: protocol.FormatJPEG, Width: w, Height: h, Data: buf.Bytes()}, nil
		}
	}
	return nil, protocol.Errorf(protocol.CodeTooLarge, "%s does not fit in %s even as a JPEG of quality %d", name, human(protocol.MaxDocumentImageBytes), jpegQualities[len(jpegQualities)-1])
}
