package guest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestHostileDocumentAnswers: what a guest answers read_document with is
// checked before anyone uses it: an image that is not the PNG or JPEG it
// says, or larger than asked, text longer than asked or not UTF-8, pages
// that do not add up, each fail the call as invalid; a well-formed answer
// passes.
func TestHostileDocumentAnswers(t *testing.T) {
	ask := protocol.ReadDocumentParams{Path: "inbox/a", MaxChars: 2000, MaxWidth: 100, MaxHeight: 100}
	img := func(format string, w, h int, data []byte) *protocol.DocumentImage {
		return &protocol.DocumentImage{Format: format, Width: w, Height: h, Data: data}
	}
	text := protocol.DocumentResult{Kind: "text", Format: "pdf", Size: 10, Text: "hello", Pages: 3, Page: 1, Truncated: true, NextPage: 2}
	picture := protocol.DocumentResult{Kind: "image", Format: "heic", Size: 10, Width: 4000, Height: 3000, Image: img("png", 4, 3, pngOf(4, 3))}
	with := func(r protocol.DocumentResult, f func(*protocol.DocumentResult)) protocol.DocumentResult {
		f(&r)
		return r
	}
	for name, c := range map[string]struct {
		res  protocol.DocumentResult
		want string
	}{
		"text":                     {text, ""},
		"image":                    {picture, ""},
		"text over what was asked": {with(text, func(r *protocol.DocumentResult) { r.Text = strings.Repeat("x", 3000) }), "3000 bytes of text for at most 2000"},
		"text not UTF-8":           {with(text, func(r *protocol.DocumentResult) { r.Text = "\xff\xfe" }), "not UTF-8"},
		"page past the pages":      {with(text, func(r *protocol.DocumentResult) { r.Page = 4 }), "page 4 of 3"},
		"a billion pages":          {with(text, func(r *protocol.DocumentResult) { r.Pages = 2_000_000_000 }), "is not a page"},
		"next page behind":         {with(text, func(r *protocol.DocumentResult) { r.Page, r.NextPage = 2, 1 }), "next page 1"},
		"negative offset":          {with(text, func(r *protocol.DocumentResult) { r.NextOffset = -5 }), "negative"},
		"a format that is a story": {with(text, func(r *protocol.DocumentResult) { r.Format = "pdf\x1b[2J" }), "named the format"},
		"an unknown kind":          {with(text, func(r *protocol.DocumentResult) { r.Kind = "video" }), `kind "video"`},
		"an image with text":       {with(picture, func(r *protocol.DocumentResult) { r.Text = "x" }), "text with an image"},
		"no image":                 {with(picture, func(r *protocol.DocumentResult) { r.Image = nil }), "sent no image"},
		"an image that lies":       {with(picture, func(r *protocol.DocumentResult) { r.Image = img("png", 40, 30, pngOf(4, 3)) }), "is 4x3, not the 40x30"},
		"a JPEG called PNG":        {with(picture, func(r *protocol.DocumentResult) { r.Image = img("png", 4, 3, jpegOf(4, 3)) }), "is a jpeg, not the png it reported"},
		"a GIF": {with(picture, func(r *protocol.DocumentResult) {
			r.Image = img("gif", 1, 1, []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
		}), "only PNG and JPEG are taken"},
		"larger than asked":         {with(picture, func(r *protocol.DocumentResult) { r.Image = img("png", 400, 3, pngOf(400, 3)) }), "not within the 100x100"},
		"bytes that are no image":   {with(picture, func(r *protocol.DocumentResult) { r.Image = img("png", 4, 3, []byte("\x1b[31mnot")) }), "does not decode"},
		"a size of minus one pixel": {with(picture, func(r *protocol.DocumentResult) { r.Width = -1 }), "-1x3000"},
	} {
		t.Run(name, func(t *testing.T) {
			res := c.res
			err := checkDocument(ask, &res)
			if c.want == "" {
				if err != nil {
					t.Fatalf("a good answer refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalid) || !printable(err) {
				t.Fatalf("err = %v, want invalid saying %q", err, c.want)
			}
		})
	}

	// Through the wire: a guest that answers with a lying image fails the
	// call, and the client goes on.
	g := newRogue(t, func(n int, id json.RawMessage) []byte {
		if n != 1 {
			return nil
		}
		b, _ := json.Marshal(with(picture, func(r *protocol.DocumentResult) { r.Image = img("png", 99, 99, pngOf(4, 3)) }))
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, b)
	})
	cl := connectRogue(t, g)
	if _, err := cl.ReadDocument(context.Background(), ask); err == nil || !strings.Contains(err.Error(), "read_document: the guest's image is 4x3, not the 99x99") {
		t.Fatalf("a lying image over the wire: %v", err)
	}
	recovers(t, cl)
}

func jpegOf(w, h int) []byte {
	var b bytes.Buffer
	jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)), nil)
	return b.Bytes()
}
