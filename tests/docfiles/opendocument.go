package docfiles

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const odfNamespaces = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
	`xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" ` +
	`xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"`

// odf writes an OpenDocument file: its mimetype first and stored, the
// manifest, and content.xml with body.
func odf(mime, body string) ([]byte, error) {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, err := z.CreateHeader(&zip.FileHeader{Name: "mimetype", Method: zip.Store})
	if err != nil {
		return nil, err
	}
	w.Write([]byte(mime))
	if err := addParts(z, map[string]string{
		"META-INF/manifest.xml": `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">` +
			`<manifest:file-entry manifest:full-path="/" manifest:media-type="` + mime + `"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
		"content.xml": `<?xml version="1.0" encoding="UTF-8"?><office:document-content ` + odfNamespaces + ` office:version="1.2"><office:body>` + body + `</office:body></office:document-content>`,
	}); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addParts(z *zip.Writer, parts map[string]string) error {
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := z.Create(n)
		if err != nil {
			return err
		}
		if _, err := w.Write([]byte(parts[n])); err != nil {
			return err
		}
	}
	return nil
}

// ODT is a text document: a heading, then paragraphs.
func ODT(heading string, paragraphs ...string) ([]byte, error) {
	body := `<office:text><text:h text:outline-level="1">` + html.EscapeString(heading) + `</text:h>`
	for _, p := range paragraphs {
		body += `<text:p>` + html.EscapeString(p) + `</text:p>`
	}
	return odf("application/vnd.oasis.opendocument.text", body+`</office:text>`)
}

// Sheet is a spreadsheet's sheet: its name and rows; a cell that parses
// as a number is a number.
type Sheet struct {
	Name string
	Rows [][]string
}

// ODS is a spreadsheet of sheets.
func ODS(sheets ...Sheet) ([]byte, error) {
	var b strings.Builder
	b.WriteString(`<office:spreadsheet>`)
	for _, s := range sheets {
		fmt.Fprintf(&b, `<table:table table:name="%s">`, html.EscapeString(s.Name))
		for _, row := range s.Rows {
			b.WriteString(`<table:table-row>`)
			for _, c := range row {
				var f float64
				if _, err := fmt.Sscanf(c, "%g", &f); err == nil && fmt.Sprint(f) == c {
					fmt.Fprintf(&b, `<table:table-cell office:value-type="float" office:value="%s"><text:p>%s</text:p></table:table-cell>`, c, c)
				} else {
					fmt.Fprintf(&b, `<table:table-cell office:value-type="string"><text:p>%s</text:p></table:table-cell>`, html.EscapeString(c))
				}
			}
			b.WriteString(`</table:table-row>`)
		}
		b.WriteString(`</table:table>`)
	}
	b.WriteString(`</office:spreadsheet>`)
	return odf("application/vnd.oasis.opendocument.spreadsheet", b.String())
}

// ODP is a presentation, a slide for each text.
func ODP(slides ...string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(`<office:presentation>`)
	for i, s := range slides {
		fmt.Fprintf(&b, `<draw:page draw:name="p%d"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame></draw:page>`,
			i+1, html.EscapeString(s))
	}
	b.WriteString(`</office:presentation>`)
	return odf("application/vnd.oasis.opendocument.presentation", b.String())
}

// Convert converts the files in dir named by sources to format (docx,
// xlsx, pptx, rtf) with LibreOffice headless, beside them, and returns
// the new files' paths.
func Convert(ctx context.Context, dir, format string, sources ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	profile := filepath.Join(dir, ".libreoffice-profile")
	args := append([]string{"--headless", "--norestore", "-env:UserInstallation=file://" + profile, "--convert-to", format, "--outdir", dir}, sources...)
	cmd := exec.CommandContext(ctx, "soffice", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("soffice --convert-to %s: %w: %s", format, err, out)
	}
	os.RemoveAll(profile)
	var made []string
	for _, s := range sources {
		p := filepath.Join(dir, strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))+"."+format)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("soffice made no %s: %w", p, err)
		}
		made = append(made, p)
	}
	return made, nil
}
