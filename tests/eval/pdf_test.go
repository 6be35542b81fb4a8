package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"
)

// The starter suite's PDFs (suites/linux-desktop/files/pdf) are this
// file's output, so that they stay small and their text is in the
// source: one PDF each, written with fpdf (github.com/go-pdf/fpdf, a
// maintained PDF writer) in the standard Helvetica fonts, its streams
// compressed (the text is found by reading the PDF, not by searching its
// bytes). TestSuitePDFs checks that each committed file reads as what
// this file writes and that pdftotext reads the tasks' text from them;
// HIVECREW_EVAL_WRITE_PDFS=1 rewrites them.

// pdfCell is a piece of text on a line: its left edge at x points, or
// its right edge there when right is set (numbers in a column).
type pdfCell struct {
	x     float64
	text  string
	right bool
}

// pdfLine is a line of a page; lines run down from the top, each
// size×1.5 points below the last. A line without cells is a blank one.
type pdfLine struct {
	size  float64
	bold  bool
	cells []pdfCell
}

// pdfText, pdfHeading and pdfBlank are a line of text, a heading and a
// blank line.
func pdfText(s string) pdfLine { return pdfLine{size: 11, cells: []pdfCell{{x: 72, text: s}}} }

func pdfHeading(s string) pdfLine {
	return pdfLine{size: 18, bold: true, cells: []pdfCell{{x: 72, text: s}}}
}

func pdfBlank() pdfLine { return pdfLine{size: 11} }

// pdfRow is a line of an invoice's table: the description, then the
// numbers right-aligned in their columns.
func pdfRow(bold bool, desc string, nums ...string) pdfLine {
	l := pdfLine{size: 11, bold: bold, cells: []pdfCell{{x: 72, text: desc}}}
	for i, n := range nums {
		l.cells = append(l.cells, pdfCell{x: []float64{340, 430, 523}[i+3-len(nums)], text: n, right: true})
	}
	return l
}

// suitePDFs are the suite's PDFs by their path under files/.
var suitePDFs = map[string][][]pdfLine{
	"pdf/invoice.pdf": {{
		pdfHeading("Northwind Office Supply"),
		pdfText("12 Harbour Street, Bristol BS1 4QA"),
		pdfBlank(),
		{size: 16, bold: true, cells: []pdfCell{{x: 72, text: "INVOICE"}}},
		pdfText("Invoice number: INV-2024-0117"),
		pdfText("Date: 15 March 2024"),
		pdfText("Bill to: Riverside Chess Club, 3 Mill Lane, Bristol"),
		pdfBlank(),
		pdfRow(true, "Description", "Qty", "Unit price", "Amount"),
		pdfRow(false, "Desk lamp", "4", "32.50", "130.00"),
		pdfRow(false, "Office chair", "2", "189.00", "378.00"),
		pdfRow(false, "Whiteboard 120 x 90 cm", "1", "94.90", "94.90"),
		pdfRow(false, "Copy paper A4, box of 5 reams", "10", "24.80", "248.00"),
		pdfBlank(),
		pdfRow(false, "Subtotal", "850.90"),
		pdfRow(false, "VAT 20%", "170.18"),
		pdfRow(false, "Shipping", "15.00"),
		pdfRow(true, "Total due (EUR)", "1,036.08"),
		pdfBlank(),
		pdfText("Please pay within 30 days to IBAN GB29 NWBK 6016 1331 9268 19."),
	}},
	"pdf/minutes.pdf": {{
		pdfHeading("Riverside Garden Club"),
		pdfText("Minutes of the meeting of 12 March 2024"),
		pdfText("Present: Ann Baker, Tom Clark, Priya Das, Luis Ortega"),
		pdfText("1. The spring plant sale will be held on 20 April."),
		pdfText("2. Tom Clark will order 40 bags of compost."),
		pdfText("3. The greenhouse door needs a new lock."),
	}, {
		pdfText("4. The membership fee stays at 25 pounds a year."),
		pdfText("5. Priya Das reported on the seed swap: 112 packets changed hands."),
		pdfText("Next meeting: 9 April 2024, 7 pm, in the village hall."),
	}},
	"pdf/letter-1.pdf": {pdfLetter("Harbour Lettings", "Rent review",
		"From 1 June your monthly rent will be 845 pounds.",
		"The new rent includes the service charge for the stairwell.",
		"Please update your standing order before the end of May.")},
	"pdf/letter-2.pdf": {pdfLetter("Bristol Water", "Your water bill",
		"Your water and sewerage charges for the year are 458.40 pounds.",
		"We will collect 38.20 pounds a month by direct debit.",
		"Your meter was read on 2 April.")},
	"pdf/letter-3.pdf": {pdfLetter("Ms. J. Okafor, Flat 5", "The ceiling of your bathroom",
		"A pipe under the floor of my flat has been leaking into your bathroom.",
		"My plumber will come to repair it on Tuesday 14 May between 8 and 12.",
		"Please let him into your flat. I am sorry for the trouble.")},
	"pdf/letter-4.pdf": {pdfLetter("Bristol City Council", "Residents' parking permit",
		"Your parking permit for zone C ends on 30 June.",
		"You can renew it online or at the council office.",
		"The permit costs 60 pounds for a year.")},
}

// pdfLetter is a one-page letter to Flat 3.
func pdfLetter(from, subject string, body ...string) []pdfLine {
	page := []pdfLine{pdfText(from), pdfBlank(), pdfText("To the tenant of Flat 3, 8 Quay Road, Bristol"), pdfBlank(),
		{size: 13, bold: true, cells: []pdfCell{{x: 72, text: subject}}}, pdfBlank(), pdfText("Dear tenant,")}
	for _, b := range body {
		page = append(page, pdfText(b))
	}
	return append(page, pdfBlank(), pdfText("Yours sincerely,"), pdfText(from))
}

// pdfDate is every PDF's creation date: the same files each time.
var pdfDate = time.Date(2024, 3, 15, 9, 0, 0, 0, time.UTC)

// makePDF writes pages of lines as a PDF on A4 paper, each page's first
// line an inch below its top.
func makePDF(pages [][]pdfLine) ([]byte, error) {
	pdf := fpdf.New("P", "pt", "A4", "")
	pdf.SetCreationDate(pdfDate)
	pdf.SetModificationDate(pdfDate)
	pdf.SetCatalogSort(true)
	pdf.SetAutoPageBreak(false, 0)
	for _, lines := range pages {
		pdf.AddPage()
		y := 72.0
		for _, l := range lines {
			style := ""
			if l.bold {
				style = "B"
			}
			pdf.SetFont("Helvetica", style, l.size)
			for _, c := range l.cells {
				x := c.x
				if c.right {
					x -= pdf.GetStringWidth(c.text)
				}
				pdf.Text(x, y, c.text)
			}
			y += l.size * 1.5
		}
	}
	var b bytes.Buffer
	err := pdf.Output(&b)
	return b.Bytes(), err
}

// TestSuitePDFs: the suite's PDFs read as the generator's output, and
// pdftotext reads them without complaint and finds what the tasks'
// checkers expect.
func TestSuitePDFs(t *testing.T) {
	write := os.Getenv("HIVECREW_EVAL_WRITE_PDFS") == "1"
	fresh := t.TempDir()
	// text is what pdftotext reads of each committed PDF.
	text := map[string]string{}
	for name, pages := range suitePDFs {
		path := filepath.Join(starter, "files", filepath.FromSlash(name))
		want, err := makePDF(pages)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if write {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		made := filepath.Join(fresh, filepath.Base(name))
		if err := os.WriteFile(made, want, 0o644); err != nil {
			t.Fatal(err)
		}
		text[name] = pdftotext(t, path)
		if got, want := text[name], pdftotext(t, made); got != want {
			t.Errorf("%s does not read as the generator's output: HIVECREW_EVAL_WRITE_PDFS=1 go test -run TestSuitePDFs ./tests/eval/ rewrites it\n%s\nwant\n%s", name, got, want)
		}
	}
	for name, want := range map[string][]string{
		"pdf/invoice.pdf":  {`(?m)^\s*Total due \(EUR\)\s+1,036\.08$`, `(?m)^\s*Subtotal\s+850\.90$`, `(?m)^\s*Desk lamp\s+4\s+32\.50\s+130\.00$`},
		"pdf/minutes.pdf":  {`(?s)^Riverside Garden Club\n.*new lock\.\n\f4\. The membership .*village hall\.\n\f$`},
		"pdf/letter-3.pdf": {`My plumber will come to repair it on Tuesday 14 May`},
	} {
		out := text[name]
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("pdftotext -layout %s does not match %q:\n%s", name, w, out)
			}
		}
	}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("pdf/letter-%d.pdf", i)
		if out := text[name]; strings.Contains(out, "plumber") != (i == 3) {
			t.Errorf("%s: only letter-3 should mention the plumber:\n%s", name, out)
		}
	}
}

// pdftotext returns the text of a PDF as pdftotext reads it (with
// -layout), which must not report errors.
func pdftotext(t *testing.T, path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pdftotext", "-layout", path, "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("pdftotext %s: %v: %s (scripts/deps installs poppler-utils)", path, err, stderr.String())
	}
	return string(out)
}
