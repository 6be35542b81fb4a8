package documents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Tools reads documents with the tools of a Linux guest: pdfinfo and
// pdftotext (poppler-utils) for PDFs, LibreOffice headless for the Office
// and OpenDocument formats and RTF (converted to PDF, or spreadsheets to a
// CSV file per sheet, once per document), and heif-convert (libheif) for
// HEIC images. Each runs under Run's bounds.
type Tools struct {
	// Dir is a private folder for LibreOffice's profile. Required.
	Dir string
	// Timeout bounds each run of pdfinfo, pdftotext and heif-convert
	// (default DefaultTimeout); OfficeTimeout each LibreOffice
	// conversion (default DefaultOfficeTimeout).
	Timeout, OfficeTimeout time.Duration

	// office is held (a token in it) by the LibreOffice run under way:
	// one profile serves one at a time.
	office chan struct{}
}

var _ Extractor = (*Tools)(nil)

// Bounds of the tools' runs.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultOfficeTimeout = 60 * time.Second
	// pdfBatch is how many pages one pdftotext run reads.
	pdfBatch = 10
	// toolOutputCap bounds what a tool prints (a batch of pages' text);
	// toolFileCap each file it writes; toolMemory its address space
	// (LibreOffice maps much it never touches).
	toolOutputCap = 8 << 20
	toolFileCap   = 512 << 20
	toolMemory    = 1 << 30
	officeMemory  = 3 << 30
)

// NewTools returns Tools keeping LibreOffice's profile in dir.
func NewTools(dir string) *Tools {
	t := &Tools{Dir: dir, office: make(chan struct{}, 1)}
	t.office <- struct{}{}
	return t
}

func (t *Tools) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultTimeout
}

// Text implements Extractor.
func (t *Tools) Text(ctx context.Context, doc Doc, first int) (Pages, error) {
	switch doc.Format.Class() {
	case ClassPaged, ClassSlides:
		pdf := doc.Path
		if doc.Format != PDF {
			var err error
			if pdf, err = t.convertedPDF(ctx, doc); err != nil {
				return Pages{}, err
			}
		}
		return t.pdfPages(ctx, pdf, doc.Name, first)
	case ClassSheets:
		return t.sheets(ctx, doc, first)
	}
	return Pages{}, protocol.Errorf(protocol.CodeUnsupported, "%s is not a document with pages", doc.Name)
}

var pagesLine = regexp.MustCompile(`(?m)^Pages:\s+(\d+)\s*$`)

// pdfPages reads a batch of a PDF's pages with pdftotext, after pdfinfo
// has said how many it has.
func (t *Tools) pdfPages(ctx context.Context, pdf, name string, first int) (Pages, error) {
	info, err := Run(ctx, Command{Name: "pdfinfo", Args: []string{"pdfinfo", pdf}, Timeout: t.timeout(),
		OutputCap: 64 << 10, Memory: toolMemory, What: "reading " + name})
	if err != nil {
		return Pages{}, err
	}
	m := pagesLine.FindSubmatch(info.Stdout)
	if m == nil {
		return Pages{}, protocol.Errorf(protocol.CodeUnsupported, "pdfinfo found no page count in %s%s", name, firstLines(info.Stderr))
	}
	total, err := strconv.Atoi(string(m[1]))
	if err != nil || total > protocol.MaxDocumentPages {
		return Pages{}, protocol.Errorf(protocol.CodeTooLarge, "%s says it has %s pages: refused", name, m[1])
	}
	if total == 0 || first > total {
		return Pages{Total: total, First: first}, nil
	}
	last := min(first+pdfBatch-1, total)
	what := fmt.Sprintf("reading pages %d-%d of %s", first, last, name)
	if first == last {
		what = fmt.Sprintf("reading page %d of %s", first, name)
	}
	out, err := Run(ctx, Command{Name: "pdftotext", Args: []string{"pdftotext", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last),
		"-enc", "UTF-8", "-eol", "unix", pdf, "-"}, Timeout: t.timeout(), OutputCap: toolOutputCap, Memory: toolMemory, What: what})
	if err != nil {
		return Pages{}, err
	}
	// pdftotext ends each page with a form feed.
	texts := strings.Split(strings.ToValidUTF8(string(out.Stdout), "\uFFFD"), "\f")
	texts = texts[:min(len(texts), last-first+1)]
	if strings.TrimSpace(strings.Join(texts, "")) == "" && strings.Contains(out.Stderr, "Error") {
		// Poppler reads past what it can; a PDF it read nothing of and
		// complained about is broken or hostile, not a scan.
		return Pages{}, protocol.Errorf(protocol.CodeUnsupported, "pdftotext read no text %s and reported errors: the PDF is damaged or hostile%s", what, firstLines(out.Stderr))
	}
	return Pages{Total: total, First: first, Text: texts}, nil
}

// soffice runs a LibreOffice conversion of doc into out, as target says
// (a --convert-to argument), one at a time.
func (t *Tools) soffice(ctx context.Context, doc Doc, target, out string) (Output, error) {
	select {
	case <-t.office:
	case <-ctx.Done():
		return Output{}, ctx.Err()
	}
	defer func() { t.office <- struct{}{} }()
	if _, err := exec.LookPath("soffice"); err != nil {
		return Output{}, protocol.Errorf(protocol.CodeUnsupported, "this guest has no LibreOffice to read %s files with (a linux-desktop template has it when built with --with libreoffice)",
			strings.ToUpper(string(doc.Format)))
	}
	if err := os.MkdirAll(t.Dir, 0o700); err != nil {
		return Output{}, protocol.Errorf(protocol.CodeInternalError, "LibreOffice's profile: %v", err)
	}
	profile := (&url.URL{Scheme: "file", Path: filepath.Join(t.Dir, "libreoffice-profile")}).String()
	timeout := t.OfficeTimeout
	if timeout <= 0 {
		timeout = DefaultOfficeTimeout
	}
	return Run(ctx, Command{Name: "LibreOffice", Args: []string{"soffice", "--headless", "--norestore", "--nolockcheck", "--nologo",
		"-env:UserInstallation=" + profile, "--convert-to", target, "--outdir", out, doc.Path},
		Dir: doc.Dir, Timeout: timeout, OutputCap: 1 << 20, Memory: officeMemory, FileCap: toolFileCap, What: "converting " + doc.Name})
}

// convertedPDF converts a document to PDF, once: the copy's folder keeps it.
func (t *Tools) convertedPDF(ctx context.Context, doc Doc) (string, error) {
	pdf := filepath.Join(doc.Dir, "converted.pdf")
	if _, err := os.Stat(pdf); err == nil {
		return pdf, nil
	}
	out := filepath.Join(doc.Dir, "pdf")
	res, err := t.soffice(ctx, doc, "pdf", out)
	if err != nil {
		return "", err
	}
	made := filepath.Join(out, strings.TrimSuffix(filepath.Base(doc.Path), filepath.Ext(doc.Path))+".pdf")
	if err := os.Rename(made, pdf); err != nil {
		return "", protocol.Errorf(protocol.CodeUnsupported, "LibreOffice could not read %s%s", doc.Name, firstLines(res.Stderr+"\n"+string(res.Stdout)))
	}
	return pdf, nil
}

// csvFilter exports every sheet to a CSV file of its own, in UTF-8,
// comma-separated, values as the sheet shows them.
const csvFilter = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1"

// sheet is a spreadsheet's sheet as LibreOffice wrote it.
type sheet struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// sheets reads a spreadsheet's sheets from first on, converted once to
// CSV files (the copy's folder keeps them, and their order).
func (t *Tools) sheets(ctx context.Context, doc Doc, first int) (Pages, error) {
	index := filepath.Join(doc.Dir, "sheets.json")
	var list []sheet
	if b, err := os.ReadFile(index); err == nil {
		json.Unmarshal(b, &list)
	} else {
		out := filepath.Join(doc.Dir, "sheets")
		res, err := t.soffice(ctx, doc, csvFilter, out)
		if err != nil {
			return Pages{}, err
		}
		// LibreOffice names each sheet and its file, in order:
		// "Writing sheet NAME -> OUT/document-NAME.csv".
		sep := " -> " + out + string(filepath.Separator)
		for _, line := range strings.Split(string(res.Stdout), "\n") {
			rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "Writing sheet ")
			name, file, found := strings.Cut(rest, sep)
			if !ok || !found || strings.ContainsRune(file, filepath.Separator) {
				continue
			}
			list = append(list, sheet{Name: name, File: file})
		}
		if len(list) == 0 {
			return Pages{}, protocol.Errorf(protocol.CodeUnsupported, "LibreOffice could not read %s%s", doc.Name, firstLines(res.Stderr+"\n"+string(res.Stdout)))
		}
		b, _ := json.Marshal(list)
		if err := os.WriteFile(index, b, 0o600); err != nil {
			return Pages{}, protocol.Errorf(protocol.CodeInternalError, "keep the sheets of %s: %v", doc.Name, err)
		}
	}
	pages := Pages{Total: len(list), First: first}
	size := 0
	for i := first - 1; i >= 0 && i < len(list) && size < toolOutputCap; i++ {
		b, err := readUpTo(filepath.Join(doc.Dir, "sheets", list[i].File), toolOutputCap)
		if err != nil {
			return Pages{}, protocol.Errorf(protocol.CodeInternalError, "read sheet %d of %s: %v", i+1, doc.Name, err)
		}
		size += len(b)
		text := strings.ToValidUTF8(string(b), "\uFFFD")
		if len(b) == toolOutputCap {
			text += fmt.Sprintf("\n[the sheet goes on past %s; read_file reads no further: open it in an app]\n", human(toolOutputCap))
		}
		pages.Text = append(pages.Text, text)
		pages.Names = append(pages.Names, list[i].Name)
	}
	return pages, nil
}

// Image implements Extractor: heif-convert decodes a HEIC image to PNG.
func (t *Tools) Image(ctx context.Context, doc Doc) ([]byte, Format, error) {
	if doc.Format != HEIC {
		return nil, "", protocol.Errorf(protocol.CodeUnsupported, "%s: no converter for %s images", doc.Name, doc.Format)
	}
	png := filepath.Join(doc.Dir, "converted.png")
	if _, err := os.Stat(png); err != nil {
		tmp := filepath.Join(doc.Dir, "converting.png")
		if _, err := Run(ctx, Command{Name: "heif-convert", Args: []string{"heif-convert", doc.Path, tmp}, Dir: doc.Dir,
			Timeout: t.timeout(), OutputCap: 1 << 20, Memory: toolMemory, FileCap: toolFileCap, What: "decoding " + doc.Name}); err != nil {
			return nil, "", err
		}
		if err := os.Rename(tmp, png); err != nil {
			return nil, "", protocol.Errorf(protocol.CodeUnsupported, "heif-convert made no image of %s", doc.Name)
		}
	}
	b, err := os.ReadFile(png)
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeInternalError, "read the decoded %s: %v", doc.Name, err)
	}
	return b, PNG, nil
}

// readUpTo reads at most n bytes of a file.
func readUpTo(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}
