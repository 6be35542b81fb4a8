package documents

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Bounds of the files Reader reads.
const (
	// MaxSourceBytes bounds the file read_document reads.
	MaxSourceBytes = 128 << 20
	// maxHTMLText bounds the text taken from an HTML file.
	maxHTMLText = 4 << 20
	// minChars is the least text an answer may be asked for.
	minChars = 1000
	// cachedCopies is how many documents keep their private copy (and
	// what the tools made of it) for the next page.
	cachedCopies = 4
)

// Doc is a document an Extractor reads: a private copy at Path in Dir
// (the extractor may keep what it converts in Dir, which lives as long
// as the copy), of Format, which the model calls Name.
type Doc struct {
	Dir, Path, Name string
	Format          Format
}

// Pages is text an Extractor read: of the document's Total pages (slides,
// sheets), those from First on, as many as it read in one go. Names are
// the sheets' names, by Text's index (spreadsheets).
type Pages struct {
	Total int
	First int
	Text  []string
	Names []string
}

// Extractor reads what needs the guest's own tools.
type Extractor interface {
	// Text reads doc's pages from first on: at least that page when the
	// document has it. A document without pages is Total 0. A ClassPaged,
	// ClassSlides or ClassSheets format it cannot read is a
	// CodeUnsupported error that says so.
	Text(ctx context.Context, doc Doc, first int) (Pages, error)
	// Image turns an image file Go does not decode (HEIC) into PNG or
	// JPEG bytes, and says which.
	Image(ctx context.Context, doc Doc) ([]byte, Format, error)
}

// Config configures a Reader.
type Config struct {
	// Extractor reads documents; nil reads only text, HTML and images Go
	// decodes.
	Extractor Extractor
	// TempDir holds the private copies; "" is os.TempDir().
	TempDir string
}

// Reader answers read_document. It reads one file at a time (a model
// reads one after another), and keeps the private copies of the last
// few documents, so that reading on does not convert them again.
type Reader struct {
	cfg Config
	// turn is held (a token in it) by the read under way; it guards dir
	// and cache.
	turn  chan struct{}
	dir   string
	cache []copyEntry // least recently used first
}

// copyEntry is a document's private copy, by the identity of its file.
type copyEntry struct {
	key string
	doc Doc
}

// New returns a Reader.
func New(cfg Config) *Reader {
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	r := &Reader{cfg: cfg, turn: make(chan struct{}, 1)}
	r.turn <- struct{}{}
	return r
}

// Close removes the private copies.
func (r *Reader) Close() error {
	<-r.turn
	defer func() { r.turn <- struct{}{} }()
	r.cache = nil
	if r.dir == "" {
		return nil
	}
	return os.RemoveAll(r.dir)
}

// Read reads file f, which the model calls name, as p asks: see
// protocol.ReadDocumentParams and DocumentResult.
func (r *Reader) Read(ctx context.Context, f *os.File, name string, p protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
	if p.Page < 0 || p.Offset < 0 || p.MaxChars < 0 || p.MaxWidth < 0 || p.MaxHeight < 0 || p.Page > protocol.MaxDocumentPages {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeInvalidParams, "page, offset, maxChars, maxWidth and maxHeight must not be negative (page at most %d)", protocol.MaxDocumentPages)
	}
	select {
	case <-r.turn:
	case <-ctx.Done():
		return protocol.DocumentResult{}, ctx.Err()
	}
	defer func() { r.turn <- struct{}{} }()

	fi, err := f.Stat()
	if err != nil {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeInternalError, "stat %s: %v", name, err)
	}
	if !fi.Mode().IsRegular() {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeInvalidParams, "%s is not a regular file", name)
	}
	if fi.Size() > MaxSourceBytes {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeTooLarge, "%s is %s, more than the %s read_file reads: open it with an app, or cut it with run_shell",
			name, human(fi.Size()), human(MaxSourceBytes))
	}
	head := make([]byte, 4096)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return protocol.DocumentResult{}, protocol.Errorf(protocol.CodeInternalError, "read %s: %v", name, err)
	}
	head = head[:n]
	format := Detect(head, name)
	res := protocol.DocumentResult{Kind: protocol.DocumentKindText, Format: string(format), Size: fi.Size()}
	page := max(p.Page, 1)
	chars := p.MaxChars
	if chars == 0 || chars > protocol.MaxDocumentText {
		chars = protocol.MaxDocumentText
	}
	chars = max(chars, minChars)

	switch format.Class() {
	case ClassText:
		if page != 1 {
			return res, protocol.Errorf(protocol.CodeInvalidParams, "page %d: %s is a text file, one page (go on with offset)", page, name)
		}
		return res, readText(&res, f, fi.Size(), p.Offset, chars, name)
	case ClassHTML:
		text, cut := HTMLText(io.LimitReader(f, MaxSourceBytes), maxHTMLText)
		if cut {
			text += fmt.Sprintf("\n[the page's text goes on past %s; read_file reads no further: open it in the browser]\n", human(maxHTMLText))
		}
		return res, Assemble(&res, Pages{Total: 1, First: 1, Text: []string{text}}, page, p.Offset, chars, "Page")
	case ClassImage:
		res.Kind = protocol.DocumentKindImage
		return res, r.readImage(ctx, &res, f, fi, head, format, name, p)
	case ClassPaged, ClassSlides, ClassSheets:
		if r.cfg.Extractor == nil {
			return res, protocol.Errorf(protocol.CodeUnsupported, "this guest cannot read %s files", strings.ToUpper(string(format)))
		}
		if format.Zipped() {
			if err := CheckZip(f, fi.Size(), name); err != nil {
				return res, err
			}
		}
		doc, err := r.copyOf(f, fi, head, format, name)
		if err != nil {
			return res, err
		}
		pages, err := r.cfg.Extractor.Text(ctx, doc, page)
		if err != nil {
			return res, err
		}
		label := map[Class]string{ClassPaged: "Page", ClassSlides: "Slide", ClassSheets: "Sheet"}[format.Class()]
		return res, Assemble(&res, pages, page, p.Offset, chars, label)
	}
	kind := "binary data"
	if len(head) > 0 {
		kind = fmt.Sprintf("binary data starting %q", head[:min(len(head), 8)])
	}
	return res, protocol.Errorf(protocol.CodeUnsupported, "%s is not text, a document or an image read_file reads (%s, %s): open it with an app, or inspect it with run_shell",
		name, kind, human(fi.Size()))
}

// readImage reads an image file: its size, and unless p says NoImage,
// the image fitted for the model.
func (r *Reader) readImage(ctx context.Context, res *protocol.DocumentResult, f *os.File, fi os.FileInfo, head []byte, format Format, name string, p protocol.ReadDocumentParams) error {
	var data []byte
	if format == HEIC {
		if r.cfg.Extractor == nil {
			return protocol.Errorf(protocol.CodeUnsupported, "this guest cannot decode HEIC images")
		}
		doc, err := r.copyOf(f, fi, head, format, name)
		if err != nil {
			return err
		}
		if data, format, err = r.cfg.Extractor.Image(ctx, doc); err != nil {
			return err
		}
	} else {
		var err error
		if data, err = io.ReadAll(io.NewSectionReader(f, 0, fi.Size())); err != nil {
			return protocol.Errorf(protocol.CodeInternalError, "read %s: %v", name, err)
		}
	}
	w, h, err := Size(data, format, name)
	if err != nil {
		return err
	}
	res.Width, res.Height = w, h
	if p.NoImage {
		return nil
	}
	maxW, maxH := p.MaxWidth, p.MaxHeight
	if maxW == 0 || maxW > protocol.MaxDocumentImageSide {
		maxW = protocol.MaxDocumentImageSide
	}
	if maxH == 0 || maxH > protocol.MaxDocumentImageSide {
		maxH = protocol.MaxDocumentImageSide
	}
	res.Image, err = Fit(data, format, name, maxW, maxH)
	return err
}

// readText reads a text file from offset, chars bytes at most, cut at a
// character (at a line's end when one is near).
func readText(res *protocol.DocumentResult, f *os.File, size int64, offset, chars int, name string) error {
	if int64(offset) > size {
		return protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s (%d bytes)", offset, name, size)
	}
	buf := make([]byte, chars+4)
	n, err := f.ReadAt(buf, int64(offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return protocol.Errorf(protocol.CodeInternalError, "read %s: %v", name, err)
	}
	buf = buf[:n]
	skip := 0
	for skip < len(buf) && skip < 4 && buf[skip]&0xc0 == 0x80 {
		skip++ // into a character: start at the next
	}
	buf = buf[skip:]
	end := len(buf)
	if int64(offset+skip+end) < size || end > chars {
		end = cutAt(string(buf), chars)
	}
	res.Pages, res.Page, res.Offset = 1, 1, offset+skip
	res.Text = strings.ToValidUTF8(string(buf[:end]), "\uFFFD")
	if next := offset + skip + end; int64(next) < size {
		res.Truncated, res.NextPage, res.NextOffset = true, 1, next
	}
	return nil
}

// Assemble fills res with the text of pages from page, offset on, at
// most chars bytes of it (the page headings included), and says where
// the next read starts when more follows. label names the pages ("Page",
// "Slide", "Sheet").
func Assemble(res *protocol.DocumentResult, pages Pages, page, offset, chars int, label string) error {
	noun := strings.ToLower(label) + "s"
	switch {
	case pages.Total <= 0:
		return protocol.Errorf(protocol.CodeUnsupported, "the document has no %s to read", noun)
	case pages.Total > protocol.MaxDocumentPages:
		return protocol.Errorf(protocol.CodeTooLarge, "the document says it has %d %s, more than %d: refused", pages.Total, noun, protocol.MaxDocumentPages)
	case page > pages.Total:
		return protocol.Errorf(protocol.CodeInvalidParams, "page %d: the document has %d %s", page, pages.Total, noun)
	}
	res.Kind, res.Pages, res.Page, res.Offset = protocol.DocumentKindText, pages.Total, page, offset
	var b strings.Builder
	last := pages.First - 1
	for i, t := range pages.Text {
		n := pages.First + i
		if n < page {
			continue
		}
		start := 0
		if n == page {
			if offset > len(t) {
				return protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s %d (%d bytes)", offset, strings.ToLower(label), n, len(t))
			}
			for start = offset; start < len(t) && t[start]&0xc0 == 0x80; start++ {
			}
			res.Offset = start
		}
		if pages.Total > 1 {
			h := heading(label, n, pages.Total, pages.Names, i, start > 0)
			if b.Len() > 0 && b.Len()+len(h)+minChars/2 > chars {
				break // the next page starts the next read
			}
			b.WriteString(h)
		}
		rest := t[start:]
		if start == 0 && strings.TrimSpace(rest) == "" {
			rest = "[no text on this " + strings.ToLower(label) + ": it may be a picture; open the file to see it]\n"
		}
		if room := chars - b.Len() - 1; len(rest) > room {
			cut := cutAt(rest, room)
			b.WriteString(rest[:cut])
			res.Text = b.String()
			res.Truncated, res.NextPage, res.NextOffset = true, n, start+cut
			return nil
		}
		b.WriteString(rest)
		if !strings.HasSuffix(rest, "\n") {
			b.WriteByte('\n')
		}
		last = n
	}
	res.Text = b.String()
	if last < pages.Total {
		res.Truncated, res.NextPage, res.NextOffset = true, max(last+1, page), 0
		if last < page {
			res.NextOffset = res.Offset
		}
	}
	return nil
}

// heading heads a page of a document with more than one.
func heading(label string, n, total int, names []string, i int, continued bool) string {
	h := fmt.Sprintf("--- %s %d of %d", label, n, total)
	if i < len(names) && names[i] != "" {
		h += ": " + clip(strings.Join(strings.Fields(names[i]), " "), 100)
	}
	if continued {
		h += " (continued)"
	}
	return h + " ---\n"
}

// cutAt returns where to cut s to at most n bytes: at the end of a line
// in the last quarter of it when there is one, else at a space there,
// else at a character's start.
func cutAt(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	n = len(cutRunes(s, max(n, 0)))
	for _, sep := range []byte{'\n', ' '} {
		if i := strings.LastIndexByte(s[:n], sep); i >= n*3/4 && i >= 0 {
			return i + 1
		}
	}
	return n
}

// copyOf returns the private copy of a document, made on its first read
// and kept while it is among the last cachedCopies read, by the file's
// identity (device, inode, size, modification time, first bytes).
func (r *Reader) copyOf(f *os.File, fi os.FileInfo, head []byte, format Format, name string) (Doc, error) {
	key := fmt.Sprintf("%d:%d:%x", fi.Size(), fi.ModTime().UnixNano(), crc32.ChecksumIEEE(head))
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		key = fmt.Sprintf("%v:%v:%s", st.Dev, st.Ino, key)
	}
	for i, e := range r.cache {
		if e.key == key {
			r.cache = append(append(r.cache[:i:i], r.cache[i+1:]...), e)
			e.doc.Name = name
			return e.doc, nil
		}
	}
	if r.dir == "" {
		dir, err := os.MkdirTemp(r.cfg.TempDir, "hivecrew-documents-")
		if err != nil {
			return Doc{}, protocol.Errorf(protocol.CodeInternalError, "a folder for the copy: %v", err)
		}
		r.dir = dir
	}
	dir, err := os.MkdirTemp(r.dir, "doc-")
	if err != nil {
		return Doc{}, protocol.Errorf(protocol.CodeInternalError, "a folder for the copy: %v", err)
	}
	doc := Doc{Dir: dir, Path: filepath.Join(dir, "document."+string(format)), Name: name, Format: format}
	if err := copyFile(doc.Path, f, fi.Size()); err != nil {
		os.RemoveAll(dir)
		return Doc{}, protocol.Errorf(protocol.CodeInternalError, "copy %s: %v", name, err)
	}
	if len(r.cache) >= cachedCopies {
		os.RemoveAll(r.cache[0].doc.Dir)
		r.cache = r.cache[1:]
	}
	r.cache = append(r.cache, copyEntry{key: key, doc: doc})
	return doc, nil
}

func copyFile(dst string, src *os.File, size int64) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.NewSectionReader(src, 0, size))
	return errors.Join(err, out.Close())
}
