package documents

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/docfiles"
)

// TestToolsReadAPDFInBatches: pdftotext (scripts/deps installs
// poppler-utils) reads a 14-page PDF ten pages a run; every page's text
// comes back once, headed by its number.
func TestToolsReadAPDFInBatches(t *testing.T) {
	dir := t.TempDir()
	doc := fpdf.New("P", "pt", "A4", "")
	doc.SetFont("Helvetica", "", 12)
	for i := 1; i <= 14; i++ {
		doc.AddPage()
		doc.Text(72, 72, fmt.Sprintf("This is page number %d of the report.", i))
	}
	var buf bytes.Buffer
	if err := doc.Output(&buf); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "report.pdf", buf.String())
	r := New(Config{Extractor: NewTools(t.TempDir()), TempDir: t.TempDir()})
	defer r.Close()
	f := open(t, dir, "report.pdf")
	answers := readAll(t, func(page, offset int) protocol.DocumentResult {
		res, err := r.Read(context.Background(), f, "inbox/report.pdf", protocol.ReadDocumentParams{Page: page, Offset: offset})
		if err != nil || res.Format != "pdf" || res.Pages != 14 {
			t.Fatalf("%+v, %v", res, err)
		}
		return res
	})
	if len(answers) != 2 || answers[0].NextPage != 11 {
		t.Fatalf("%d answers, the first going on at page %d", len(answers), answers[0].NextPage)
	}
	all := answers[0].Text + answers[1].Text
	for i := 1; i <= 14; i++ {
		if strings.Count(all, fmt.Sprintf("--- Page %d of 14 ---\nThis is page number %d of the report.", i, i)) != 1 {
			t.Errorf("page %d is not read once:\n%s", i, all)
		}
	}
}

// TestToolsRefuseADeeplyNestedPDF: a page whose contents nest 100,000
// arrays deep: poppler gives up on it, and the read ends in an error that
// says the PDF is damaged or hostile, at once.
func TestToolsRefuseADeeplyNestedPDF(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deep.pdf"), docfiles.NestedPDF(100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	r := New(Config{Extractor: NewTools(t.TempDir()), TempDir: t.TempDir()})
	defer r.Close()
	_, err := r.Read(context.Background(), open(t, dir, "deep.pdf"), "inbox/deep.pdf", protocol.ReadDocumentParams{})
	if err == nil || !strings.Contains(err.Error(), "damaged or hostile") {
		t.Fatalf("a deeply nested PDF: %v", err)
	}
}
