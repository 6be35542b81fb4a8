package eval

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The starter suite's PDFs (suites/linux-desktop/files/pdf) are this
// file's output, so that they stay small, deterministic and readable:
// one PDF 1.4 file each, text in the standard Helvetica fonts, streams
// in hexadecimal (not compressed: the same bytes with every Go), a
// cross-reference table with the right offsets.
// TestSuitePDFs checks that the committed files are what it writes and
// that pdftotext reads the tasks' text from them;
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

// helveticaWidth is the width of s in Helvetica at size points: the
// widths (in 1/1000 em) of the characters of the numbers it aligns.
func helveticaWidth(s string, size float64) float64 {
	w := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			w += 556
		case c == '.' || c == ',' || c == ' ':
			w += 278
		default:
			w += 611 // capitals and the rest: close enough for a heading
		}
	}
	return float64(w) * size / 1000
}

// pdfString is s as a PDF literal string: ASCII only (the fonts are
// WinAnsi-encoded), with \, ( and ) escaped.
func pdfString(s string) string {
	for _, c := range s {
		if c < ' ' || c > '~' {
			panic(fmt.Sprintf("pdf text %q: ASCII only", s))
		}
	}
	return "(" + strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`).Replace(s) + ")"
}

func pdfNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// makePDF writes pages of lines as a PDF on A4 paper.
func makePDF(pages [][]pdfLine) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// 1 the catalog, 2 the page tree, 3 and 4 the fonts, then each page
	// and its contents.
	var kids []string
	for i := range pages {
		kids = append(kids, fmt.Sprintf("%d 0 R", 5+2*i))
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
	for _, lines := range pages {
		var c strings.Builder
		y := 842.0 - 72
		for _, l := range lines {
			font := "/F1"
			if l.bold {
				font = "/F2"
			}
			for _, cell := range l.cells {
				x := cell.x
				if cell.right {
					x -= helveticaWidth(cell.text, l.size)
				}
				fmt.Fprintf(&c, "BT %s %s Tf %s %s Td %s Tj ET\n", font, pdfNum(l.size), pdfNum(x), pdfNum(y), pdfString(cell.text))
			}
			y -= l.size * 1.5
		}
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>", len(offsets)+2))
		// Hex, so that the text is found by reading the PDF, not by
		// searching its bytes.
		data := hexLines(c.String())
		obj(fmt.Sprintf("<< /Length %d /Filter /ASCIIHexDecode >>\nstream\n%sendstream", len(data), data))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// hexLines is s in hexadecimal, 64 digits a line, ending with the
// ASCIIHexDecode end marker.
func hexLines(s string) string {
	h := hex.EncodeToString([]byte(s))
	var b strings.Builder
	for len(h) > 64 {
		b.WriteString(h[:64] + "\n")
		h = h[64:]
	}
	b.WriteString(h + ">\n")
	return b.String()
}

// TestSuitePDFs: the suite's PDFs are the generator's output, their
// cross-reference tables point at their objects, and pdftotext reads
// them without complaint and finds what the tasks' checkers expect.
func TestSuitePDFs(t *testing.T) {
	write := os.Getenv("HIVECREW_EVAL_WRITE_PDFS") == "1"
	for name, pages := range suitePDFs {
		path := filepath.Join(starter, "files", filepath.FromSlash(name))
		want := makePDF(pages)
		if write {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (HIVECREW_EVAL_WRITE_PDFS=1 writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the generator's output: HIVECREW_EVAL_WRITE_PDFS=1 go test -run TestSuitePDFs ./tests/eval/ rewrites it", name)
		}
		checkXref(t, name, got)
	}
	for name, want := range map[string][]string{
		"pdf/invoice.pdf":  {`(?m)^\s*Total due \(EUR\)\s+1,036\.08$`, `(?m)^\s*Subtotal\s+850\.90$`, `(?m)^\s*Desk lamp\s+4\s+32\.50\s+130\.00$`},
		"pdf/minutes.pdf":  {`(?s)^Riverside Garden Club\n.*new lock\.\n\f4\. The membership .*village hall\.\n\f$`},
		"pdf/letter-3.pdf": {`My plumber will come to repair it on Tuesday 14 May`},
	} {
		out := pdftotext(t, name)
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(out) {
				t.Errorf("pdftotext -layout %s does not match %q:\n%s", name, w, out)
			}
		}
	}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("pdf/letter-%d.pdf", i)
		if out := pdftotext(t, name); strings.Contains(out, "plumber") != (i == 3) {
			t.Errorf("%s: only letter-3 should mention the plumber:\n%s", name, out)
		}
	}
}

// checkXref checks that each entry of a PDF's cross-reference table is
// the offset of its object.
func checkXref(t *testing.T, name string, pdf []byte) {
	m := regexp.MustCompile(`(?s)startxref\n(\d+)\n%%EOF\n$`).FindSubmatch(pdf)
	if m == nil {
		t.Fatalf("%s: no startxref at its end", name)
	}
	at, _ := strconv.Atoi(string(m[1]))
	if !bytes.HasPrefix(pdf[at:], []byte("xref\n0 ")) {
		t.Fatalf("%s: startxref %d is not the cross-reference table", name, at)
	}
	entries := regexp.MustCompile(`(\d{10}) 00000 n \n`).FindAllSubmatch(pdf[at:], -1)
	if len(entries) < 5 {
		t.Fatalf("%s: %d objects in its cross-reference table", name, len(entries))
	}
	for i, e := range entries {
		off, _ := strconv.Atoi(string(e[1]))
		if want := fmt.Sprintf("%d 0 obj\n", i+1); !bytes.HasPrefix(pdf[off:], []byte(want)) {
			t.Errorf("%s: object %d is not at offset %d", name, i+1, off)
		}
	}
}

// pdftotext returns the text of a suite's PDF as pdftotext reads it
// (with -layout), which must not report errors.
func pdftotext(t *testing.T, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pdftotext", "-layout", filepath.Join(starter, "files", filepath.FromSlash(name)), "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("pdftotext %s: %v: %s (scripts/deps installs poppler-utils)", name, err, stderr.String())
	}
	return string(out)
}
