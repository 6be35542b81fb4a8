package docfiles

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
)

// ZipBombDOCX is a DOCX whose document part expands from some hundreds of
// kilobytes to mb megabytes of spaces.
func ZipBombDOCX(mb int) ([]byte, error) {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	if err := addParts(z, map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`,
	}); err != nil {
		return nil, err
	}
	w, err := z.Create("word/document.xml")
	if err != nil {
		return nil, err
	}
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for range mb {
		if _, err := w.Write(spaces); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pdfOf writes a PDF of objects (numbered from 1, the first the catalog)
// with a correct cross-reference table.
func pdfOf(objects []string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

func pdfStream(dict, data string) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// NestedPDF is a one-page PDF whose contents are an array nested depth
// deep.
func NestedPDF(depth int) []byte {
	return pdfOf([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents " + strings.Repeat("[", depth) + "4 0 R" + strings.Repeat("]", depth) +
			" /Resources << /Font << /F1 5 0 R >> >> >>",
		pdfStream("", "BT /F1 12 Tf 72 700 Td (Deep) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	})
}

// FanOutPDF is a one-page PDF of a few kilobytes that draws a word
// fan^levels times: each form draws the one below it fan times.
func FanOutPDF(levels, fan int) []byte {
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"", // the page, below
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		pdfStream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >>", "BT /F1 12 Tf 72 700 Td (Hivecrew) Tj ET"),
	}
	draws := strings.TrimSpace(strings.Repeat("/X Do ", fan))
	for range levels {
		objs = append(objs, pdfStream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X %d 0 R >> >>", len(objs)), draws))
	}
	top := len(objs)
	objs = append(objs, pdfStream("", draws))
	objs[2] = fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /XObject << /X %d 0 R >> >> >>", len(objs), top)
	return pdfOf(objs)
}
