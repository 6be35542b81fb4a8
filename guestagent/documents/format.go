package documents

import (
	"bytes"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Format is what a file is, as read_document names it.
type Format string

// Formats read_document reads.
const (
	PDF  Format = "pdf"
	DOCX Format = "docx"
	XLSX Format = "xlsx"
	PPTX Format = "pptx"
	ODT  Format = "odt"
	ODS  Format = "ods"
	ODP  Format = "odp"
	DOC  Format = "doc"
	XLS  Format = "xls"
	PPT  Format = "ppt"
	RTF  Format = "rtf"
	HTML Format = "html"
	Text Format = "text"
	PNG  Format = "png"
	JPEG Format = "jpeg"
	GIF  Format = "gif"
	WebP Format = "webp"
	HEIC Format = "heic"
	// Binary is a file read_document does not read.
	Binary Format = "binary"
)

// Class is how a format is read.
type Class int

// Classes of formats.
const (
	ClassBinary Class = iota
	ClassText
	ClassHTML
	ClassImage
	// ClassPaged documents have pages (PDF, word processing); ClassSlides
	// slides; ClassSheets sheets: each is read by an Extractor.
	ClassPaged
	ClassSlides
	ClassSheets
)

// Class returns how f is read.
func (f Format) Class() Class {
	switch f {
	case Text:
		return ClassText
	case HTML:
		return ClassHTML
	case PNG, JPEG, GIF, WebP, HEIC:
		return ClassImage
	case PDF, DOCX, ODT, DOC, RTF:
		return ClassPaged
	case PPTX, ODP, PPT:
		return ClassSlides
	case XLSX, ODS, XLS:
		return ClassSheets
	}
	return ClassBinary
}

// Zipped reports whether f is a zip container (Office Open XML,
// OpenDocument), which the zip check reads before anything else does.
func (f Format) Zipped() bool {
	switch f {
	case DOCX, XLSX, PPTX, ODT, ODS, ODP:
		return true
	}
	return false
}

// Detect names the format of a file from its first bytes (at least the
// first 512, all of them for a smaller file) and its name. The bytes
// decide; the name only tells apart what they cannot (the Office formats
// inside a zip or an OLE container, HTML from other text).
func Detect(head []byte, name string) Format {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return PDF
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return PNG
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return JPEG
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return GIF
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return WebP
	case len(head) >= 12 && string(head[4:8]) == "ftyp" && heifBrand(string(head[8:12])):
		return HEIC
	case bytes.HasPrefix(head, []byte("{\\rtf")):
		return RTF
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return zipped(head, ext)
	case bytes.HasPrefix(head, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")):
		switch ext {
		case "doc", "xls", "ppt":
			return Format(ext)
		}
		return Binary
	}
	if !textual(head) {
		return Binary
	}
	if ext == "html" || ext == "htm" || ext == "xhtml" || looksHTML(head) {
		return HTML
	}
	return Text
}

// heifBrand reports whether an ISO media file's brand is one of HEIF's.
func heifBrand(b string) bool {
	switch b {
	case "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1":
		return true
	}
	return false
}

// zipped tells the zip containers apart: OpenDocument names its type in
// the first entry (mimetype, stored), Office Open XML by its parts, whose
// names are in the local headers near the start; the extension decides
// when neither shows.
func zipped(head []byte, ext string) Format {
	for _, t := range []struct {
		mime string
		f    Format
	}{
		{"application/vnd.oasis.opendocument.text", ODT},
		{"application/vnd.oasis.opendocument.spreadsheet", ODS},
		{"application/vnd.oasis.opendocument.presentation", ODP},
	} {
		if bytes.Contains(head, []byte("mimetype"+t.mime)) {
			return t.f
		}
	}
	for _, t := range []struct {
		part string
		f    Format
	}{{"word/", DOCX}, {"xl/", XLSX}, {"ppt/", PPTX}} {
		if bytes.Contains(head, []byte(t.part)) {
			return t.f
		}
	}
	switch f := Format(ext); f {
	case DOCX, XLSX, PPTX, ODT, ODS, ODP:
		return f
	}
	return Binary
}

// textual reports whether head reads as UTF-8 text: no NUL byte, valid
// but perhaps for a character cut at the end.
func textual(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	for cut := 0; cut < utf8.UTFMax && cut <= len(head); cut++ {
		if utf8.Valid(head[:len(head)-cut]) {
			return cut == 0 || !utf8.FullRune(head[len(head)-cut:])
		}
	}
	return false
}

// looksHTML reports whether text starts like an HTML document.
func looksHTML(head []byte) bool {
	s := strings.ToLower(strings.TrimSpace(string(head[:min(len(head), 512)])))
	s = strings.TrimPrefix(s, "\ufeff")
	return strings.HasPrefix(s, "<!doctype html") || strings.HasPrefix(s, "<html")
}
