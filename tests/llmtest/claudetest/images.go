package claudetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"image"
	_ "image/gif" // decoders of the media types the API takes
	_ "image/jpeg"
	_ "image/png"
	"strings"

	_ "golang.org/x/image/webp"
)

// Image limits of the API.
const (
	maxImageBase64   = 5 << 20 // bytes of base64, as the API measures
	maxImagePx       = 8000
	manyImages       = 20   // above this many images in a request...
	maxManyImagePx   = 2000 // ...each is at most this large
	maxRequestImages = 100
)

var mediaTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// imageBlock reads an image block: a base64 source whose data decodes as
// its media type, within the API's limits.
func (r *request) imageBlock(v any, at string, b *block) (*fields, error) {
	f, err := object(v, at, []string{"type", "source", "cache_control"}, []string{"transformations"})
	if err != nil {
		return nil, err
	}
	if err := f.required("source"); err != nil {
		return nil, err
	}
	switch typ := typeOf(f.m["source"]); typ {
	case "base64":
	case "url", "file":
		return nil, notModelled(f.at("source." + typ))
	default:
		return nil, invalid("%s: Input tag '%s' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", f.at("source"), typ)
	}
	path := f.at("source.base64")
	src, err := object(f.m["source"], path, []string{"type", "media_type", "data"}, nil)
	if err != nil {
		return nil, err
	}
	media, err := src.oneOf("media_type", true, mediaTypes...)
	if err != nil {
		return nil, err
	}
	data, err := src.str("data", true)
	if err != nil {
		return nil, err
	}
	if len(data) > maxImageBase64 {
		return nil, invalid("%s: image exceeds 5 MB maximum: %d bytes > %d bytes", path, len(data), maxImageBase64)
	}
	blob, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, invalid("%s: The image data is not valid base64", src.at("data"))
	}
	dec := r.decode(blob)
	if dec.err != nil {
		return nil, invalid("%s: Could not process image", src.at("data"))
	}
	if "image/"+dec.format != media {
		return nil, invalid("%s: Image does not match the provided media type %s", src.at("data"), media)
	}
	size := dec.size
	if size.X > maxImagePx || size.Y > maxImagePx {
		return nil, invalid("%s: At least one of the image dimensions exceed max allowed size: %d pixels", src.at("data"), maxImagePx)
	}
	b.image = &Image{Path: strings.TrimSuffix(at, ".image"), MediaType: media, Width: size.X, Height: size.Y, Bytes: len(blob)}
	b.tokens = (size.X*size.Y + 749) / 750
	r.images = append(r.images, *b.image)
	return f, nil
}

// decoded is what decoding an image's data gave.
type decoded struct {
	format string
	size   image.Point
	err    error
}

// decodeImage decodes image data whole (a truncated file fails as it
// does at the API), remembering the outcome: agent loops send the same
// screenshots again and again.
func (s *Server) decodeImage(data []byte) decoded {
	sum := sha256.Sum256(data)
	s.imgMu.Lock()
	d, ok := s.decodedImages[sum]
	s.imgMu.Unlock()
	if ok {
		return d
	}
	img, format, err := image.Decode(bytes.NewReader(data))
	d = decoded{format: format, err: err}
	if err == nil {
		d.size = img.Bounds().Size()
	}
	s.imgMu.Lock()
	s.decodedImages[sum] = d
	s.imgMu.Unlock()
	return d
}

// checkImages checks the limits on a request's images together.
func (r *request) checkImages() error {
	if n := len(r.images); n > maxRequestImages {
		return invalid("messages: Too many images: %d > %d maximum", n, maxRequestImages)
	}
	if len(r.images) <= manyImages {
		return nil
	}
	for _, im := range r.images {
		if im.Width > maxManyImagePx || im.Height > maxManyImagePx {
			return invalid("%s.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: %d pixels", im.Path, maxManyImagePx)
		}
	}
	return nil
}
