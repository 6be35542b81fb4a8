package guest

import (
	"bytes"
	"context"
	"image"
	"regexp"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// formatName is what a document's format may be called.
var formatName = regexp.MustCompile(`^[a-z0-9]{1,16}$`)

// ReadDocument reads a file as the model reads it (capability
// protocol.CapDocuments): the guest extracts a document's text, or fits
// an image file, and the host checks the answer against what it asked
// for and the protocol's bounds before anyone uses it. An image is
// checked as a screenshot is: its header only, never the whole image,
// must decode as the PNG or JPEG of the size the guest reported, within
// the bounds asked.
func (c *Client) ReadDocument(ctx context.Context, p protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
	var res protocol.DocumentResult
	if err := c.Call(ctx, protocol.MethodReadDocument, p, &res); err != nil {
		return protocol.DocumentResult{}, err
	}
	if err := checkDocument(p, &res); err != nil {
		return protocol.DocumentResult{}, errdefs.Invalidf("read_document: %v", err)
	}
	return res, nil
}

func checkDocument(p protocol.ReadDocumentParams, res *protocol.DocumentResult) error {
	if !formatName.MatchString(res.Format) {
		return errdefs.Invalidf("the guest named the format %q", clean(res.Format))
	}
	if res.Size < 0 {
		return errdefs.Invalidf("the guest reported a size of %d", res.Size)
	}
	switch res.Kind {
	case protocol.DocumentKindText:
		chars := p.MaxChars
		if chars <= 0 || chars > protocol.MaxDocumentText {
			chars = protocol.MaxDocumentText
		}
		// The guest's least answer is 1000 bytes; a line break may end it.
		if len(res.Text) > max(chars, 1000)+1 {
			return errdefs.Invalidf("the guest sent %d bytes of text for at most %d", len(res.Text), chars)
		}
		if !utf8.ValidString(res.Text) {
			return errdefs.Invalidf("the guest's text is not UTF-8")
		}
		if res.Image != nil {
			return errdefs.Invalidf("the guest sent an image with text")
		}
		pages, page := res.Pages, res.Page
		switch {
		case pages < 1 || pages > protocol.MaxDocumentPages || page < 1 || page > pages:
			return errdefs.Invalidf("the guest's page %d of %d is not a page", page, pages)
		case res.Offset < 0 || res.NextOffset < 0:
			return errdefs.Invalidf("the guest's offsets are negative")
		case res.Truncated && (res.NextPage < page || res.NextPage > pages):
			return errdefs.Invalidf("the guest's next page %d is not one of pages %d-%d", res.NextPage, page, pages)
		}
	case protocol.DocumentKindImage:
		if res.Width <= 0 || res.Height <= 0 || res.Width > 1<<20 || res.Height > 1<<20 {
			return errdefs.Invalidf("the guest's image is %dx%d pixels", res.Width, res.Height)
		}
		if res.Text != "" {
			return errdefs.Invalidf("the guest sent text with an image")
		}
		if p.NoImage {
			if res.Image != nil {
				return errdefs.Invalidf("the guest sent an image that was not asked for")
			}
			return nil
		}
		return checkDocumentImage(p, res.Image)
	default:
		return errdefs.Invalidf("the guest's answer is of kind %q", clean(res.Kind))
	}
	return nil
}

// checkDocumentImage checks an image for the model by its header.
func checkDocumentImage(p protocol.ReadDocumentParams, img *protocol.DocumentImage) error {
	if img == nil {
		return errdefs.Invalidf("the guest sent no image")
	}
	if len(img.Data) == 0 || len(img.Data) > protocol.MaxDocumentImageBytes {
		return errdefs.Invalidf("the guest's image has %d bytes (at most %d)", len(img.Data), protocol.MaxDocumentImageBytes)
	}
	maxW, maxH := p.MaxWidth, p.MaxHeight
	if maxW <= 0 || maxW > protocol.MaxDocumentImageSide {
		maxW = protocol.MaxDocumentImageSide
	}
	if maxH <= 0 || maxH > protocol.MaxDocumentImageSide {
		maxH = protocol.MaxDocumentImageSide
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data))
	switch {
	case err != nil:
		return errdefs.Invalidf("the guest's image does not decode: %v", err)
	case format != protocol.FormatPNG && format != protocol.FormatJPEG:
		return errdefs.Invalidf("the guest's image is a %s: only PNG and JPEG are taken", format)
	case format != img.Format:
		return errdefs.Invalidf("the guest's image is a %s, not the %s it reported", format, clean(img.Format))
	case cfg.Width != img.Width || cfg.Height != img.Height:
		return errdefs.Invalidf("the guest's image is %dx%d, not the %dx%d it reported", cfg.Width, cfg.Height, img.Width, img.Height)
	case cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxW || cfg.Height > maxH:
		return errdefs.Invalidf("the guest's image of %dx%d is not within the %dx%d asked for", cfg.Width, cfg.Height, maxW, maxH)
	}
	return nil
}
