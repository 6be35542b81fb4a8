package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// read_file, as the model reads files: the guest extracts a document's
// text (PDF, Office, OpenDocument, RTF, HTML), a page range at a time, or
// fits an image file, and the host shows the model what the guest's
// checked answer holds: text, or the image in the tool's result, which
// counts against the images a request carries (llm.Window). Nothing of
// the file is parsed on the host but the image's header
// (guest.Client.ReadDocument). A guest without protocol.CapDocuments is
// asked for the file's bytes, as before.

// documentChars is the most text one read_file answer carries (act cuts
// a result at 16,000 bytes).
const documentChars = 12_000

// documentImageSide bounds each side of an image file the model is shown:
// the long side Claude takes without scaling an image down, within
// OpenAI's high detail too.
const documentImageSide = 1568

// readFile answers read_file.
func (r *Runner) readFile(ctx context.Context, args map[string]any) (string, *llm.Image, error) {
	path, _ := args["path"].(string)
	if !slices.Contains(r.cfg.Guest.Hello().Capabilities, protocol.CapDocuments) {
		var raw json.RawMessage
		if err := r.cfg.Guest.Call(ctx, protocol.MethodReadFile, protocol.ReadFileParams{Path: path}, &raw); err != nil {
			return "", nil, err
		}
		return string(raw), nil, nil
	}
	p := protocol.ReadDocumentParams{Path: path, MaxChars: documentChars, MaxWidth: documentImageSide, MaxHeight: documentImageSide, NoImage: r.task.TextOnly}
	if v, ok := args["page"].(float64); ok {
		p.Page = int(v)
	}
	if v, ok := args["offset"].(float64); ok {
		p.Offset = int(v)
	}
	res, err := r.cfg.Guest.ReadDocument(ctx, p)
	if err != nil {
		return "", nil, err
	}
	head := fmt.Sprintf("%s: %s, %s", path, formatName(res.Format), byteSize(res.Size))
	if res.Kind == protocol.DocumentKindImage {
		if res.Image == nil {
			return fmt.Sprintf("%s, an image of %dx%d pixels. This model takes no images, so it is not shown.", head, res.Width, res.Height), nil, nil
		}
		img := &llm.Image{MediaType: "image/" + res.Image.Format, Width: res.Image.Width, Height: res.Image.Height,
			Data: base64.StdEncoding.EncodeToString(res.Image.Data)}
		if rel, err := r.cfg.Trace.Screenshot(res.Image.Format, res.Image.Data); err == nil {
			img.File = rel // the conversation on disk names it
		} else {
			r.traceFailed(err)
		}
		shown := fmt.Sprintf("%s, an image of %dx%d pixels", head, res.Width, res.Height)
		if img.Width != res.Width || img.Height != res.Height {
			shown += fmt.Sprintf(", shown scaled to %dx%d", img.Width, img.Height)
		}
		return shown + ":", img, nil
	}
	var b strings.Builder
	b.WriteString(head)
	if res.Pages > 1 {
		fmt.Fprintf(&b, ", %d %s", res.Pages, pagesNoun(res.Format))
	}
	switch {
	case res.Pages > 1 && (res.Page > 1 || res.Offset > 0):
		fmt.Fprintf(&b, ". From %s %d, byte %d:\n", strings.TrimSuffix(pagesNoun(res.Format), "s"), res.Page, res.Offset)
	case res.Offset > 0:
		fmt.Fprintf(&b, ". From byte %d:\n", res.Offset)
	default:
		b.WriteString(":\n")
	}
	text := files.PrintableText(res.Text)
	if strings.TrimSpace(text) == "" {
		text = "[no text]"
	}
	b.WriteString(strings.TrimRight(text, "\n"))
	switch {
	case res.Truncated && res.Pages > 1:
		fmt.Fprintf(&b, "\n[More follows: call read_file with page %d and offset %d to read on.]", res.NextPage, res.NextOffset)
	case res.Truncated:
		fmt.Fprintf(&b, "\n[More follows: call read_file with offset %d to read on.]", res.NextOffset)
	case res.Page > 1 || res.Offset > 0:
		b.WriteString("\n[End of the file.]")
	}
	return b.String(), nil, nil
}

// formatName is how the model is told a file's format.
func formatName(f string) string {
	switch f {
	case "text":
		return "text"
	case "binary":
		return "binary data"
	}
	return strings.ToUpper(f)
}

// pagesNoun is what a format's pages are called.
func pagesNoun(f string) string {
	switch f {
	case "xlsx", "ods", "xls":
		return "sheets"
	case "pptx", "odp", "ppt":
		return "slides"
	}
	return "pages"
}

// byteSize says a file's size.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
