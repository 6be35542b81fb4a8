package darwin

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/documents"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// ExtractFlag, as the agent's first argument, makes it the child that
// reads one document (ExtractMain) rather than the agent.
const ExtractFlag = "--extract-document"

// Documents reads documents with the Mac's own frameworks: PDFKit for
// PDFs, NSAttributedString for Word, OpenDocument text and RTF files,
// ImageIO for HEIC photos. Each read runs in a child process (the agent
// itself, with ExtractFlag) under documents.Run's bounds, so that a
// hostile file that hangs or crashes a framework takes down only the
// child. Spreadsheets and presentations are not read on macOS guests.
type Documents struct {
	// Exe is the agent's executable.
	Exe string
	// Timeout bounds each read (default documents.DefaultTimeout).
	Timeout time.Duration
}

var _ documents.Extractor = Documents{}

// pdfBatch is how many PDF pages one child reads.
const pdfBatch = 10

// run runs the child on doc, keeping outputCap bytes of what it prints.
func (d Documents) run(ctx context.Context, doc documents.Doc, outputCap int, args ...string) (documents.Output, error) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = documents.DefaultTimeout
	}
	return documents.Run(ctx, documents.Command{Name: "the document reader", Args: append([]string{d.Exe, ExtractFlag}, args...),
		Dir: doc.Dir, Timeout: timeout, OutputCap: outputCap, What: "reading " + doc.Name})
}

// Text implements documents.Extractor.
func (d Documents) Text(ctx context.Context, doc documents.Doc, first int) (documents.Pages, error) {
	switch doc.Format {
	case documents.PDF, documents.DOCX, documents.ODT, documents.RTF, documents.DOC:
	default:
		return documents.Pages{}, protocol.Errorf(protocol.CodeUnsupported,
			"a macOS guest reads the text of PDF, Word, OpenDocument text and RTF files, not %s: open %s in an app", strings.ToUpper(string(doc.Format)), doc.Name)
	}
	out, err := d.run(ctx, doc, 8<<20, "text", string(doc.Format), strconv.Itoa(first), doc.Path)
	if err != nil {
		return documents.Pages{}, err
	}
	var pages documents.Pages
	if err := json.Unmarshal(out.Stdout, &pages); err != nil {
		return documents.Pages{}, protocol.Errorf(protocol.CodeInternalError, "the document reader's answer for %s: %v", doc.Name, err)
	}
	return pages, nil
}

// Image implements documents.Extractor: a PNG of at most
// protocol.MaxDocumentImageSide a side.
func (d Documents) Image(ctx context.Context, doc documents.Doc) ([]byte, documents.Format, error) {
	// A PNG of 2048 x 2048 pixels may take some 16 MB.
	out, err := d.run(ctx, doc, 32<<20, "image", string(doc.Format), "0", doc.Path)
	if err != nil {
		return nil, "", err
	}
	return out.Stdout, documents.PNG, nil
}
