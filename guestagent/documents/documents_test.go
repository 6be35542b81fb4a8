package documents

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func TestDetect(t *testing.T) {
	odt := zipOf(t, map[string]string{"mimetype": "application/vnd.oasis.opendocument.text", "content.xml": "<x/>"})
	docx := zipOf(t, map[string]string{"[Content_Types].xml": "<x/>", "word/document.xml": "<x/>"})
	for _, c := range []struct {
		head []byte
		name string
		want Format
	}{
		{[]byte("%PDF-1.7\n"), "a.bin", PDF},
		{[]byte("\x89PNG\r\n\x1a\n...."), "x.pdf", PNG},
		{[]byte("\xff\xd8\xff\xe0"), "x", JPEG},
		{[]byte("GIF89a"), "x", GIF},
		{[]byte("RIFF\x10\x00\x00\x00WEBPVP8 "), "x", WebP},
		{[]byte("\x00\x00\x00\x1cftypheic\x00\x00\x00\x00"), "x", HEIC},
		{[]byte(`{\rtf1\ansi Hello}`), "x.txt", RTF},
		{odt, "renamed.zip", ODT},
		{docx, "renamed.zip", DOCX},
		{[]byte("PK\x03\x04 nothing known"), "book.xlsx", XLSX},
		{[]byte("PK\x03\x04 nothing known"), "archive.zip", Binary},
		{[]byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"), "old.doc", DOC},
		{[]byte("<!DOCTYPE html><p>x"), "page", HTML},
		{[]byte("<p>x</p>"), "page.htm", HTML},
		{[]byte("plain words ä"), "notes.md", Text},
		{[]byte("a\x00b"), "notes.txt", Binary},
		{[]byte("cut \xe2\x82"), "notes.txt", Text},
	} {
		if got := Detect(c.head, c.name); got != c.want {
			t.Errorf("Detect(%.20q, %s) = %s, want %s", c.head, c.name, got, c.want)
		}
	}
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, name := range []string{"mimetype", "[Content_Types].xml"} {
		if body, ok := files[name]; ok {
			w, _ := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
			w.Write([]byte(body))
		}
	}
	for name, body := range files {
		if name != "mimetype" && name != "[Content_Types].xml" {
			w, _ := z.Create(name)
			w.Write([]byte(body))
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads a document's text answer after answer, as a model
// following NextPage and NextOffset would, and returns the answers.
func readAll(t *testing.T, read func(page, offset int) protocol.DocumentResult) []protocol.DocumentResult {
	t.Helper()
	var out []protocol.DocumentResult
	page, offset := 1, 0
	for range 200 {
		res := read(page, offset)
		out = append(out, res)
		if !res.Truncated {
			return out
		}
		if res.NextPage == page && res.NextOffset <= offset {
			t.Fatalf("no progress at page %d offset %d: %+v", page, offset, res)
		}
		page, offset = res.NextPage, res.NextOffset
	}
	t.Fatal("more than 200 reads")
	return nil
}

func TestAssemblePagesAThousandBytesAtATime(t *testing.T) {
	var pages Pages
	pages.Total, pages.First = 5, 1
	for i := 1; i <= 5; i++ {
		pages.Text = append(pages.Text, strings.Repeat(fmt.Sprintf("page %d says ä words. ", i), 30+i*20)+"\n")
	}
	answers := readAll(t, func(page, offset int) protocol.DocumentResult {
		var res protocol.DocumentResult
		if err := Assemble(&res, pages, page, offset, 1000, "Page"); err != nil {
			t.Fatal(err)
		}
		if len(res.Text) > 1001 {
			t.Fatalf("answer of %d bytes", len(res.Text))
		}
		return res
	})
	// Without the headings, the answers are the pages, in order, whole.
	var got strings.Builder
	for _, a := range answers {
		for _, line := range strings.SplitAfter(a.Text, "\n") {
			if !strings.HasPrefix(line, "--- Page ") {
				got.WriteString(line)
			}
		}
	}
	if want := strings.Join(pages.Text, ""); got.String() != want {
		t.Fatalf("read back %d bytes, want %d:\n%s", got.Len(), len(want), got.String())
	}
	if !strings.HasPrefix(answers[0].Text, "--- Page 1 of 5 ---\n") || !strings.Contains(answers[len(answers)-1].Text, "--- Page 5 of 5") {
		t.Errorf("headings: %q ... %q", answers[0].Text[:30], answers[len(answers)-1].Text)
	}
	var res protocol.DocumentResult
	if err := Assemble(&res, pages, 6, 0, 1000, "Page"); err == nil || !strings.Contains(err.Error(), "has 5 pages") {
		t.Errorf("page 6 of 5: %v", err)
	}
	// An extractor that read pages 1-2 of 5: the next read starts at 3.
	if err := Assemble(&res, Pages{Total: 5, First: 1, Text: []string{"one\n", "two\n"}}, 1, 0, 10000, "Slide"); err != nil || !res.Truncated || res.NextPage != 3 || res.NextOffset != 0 ||
		res.Text != "--- Slide 1 of 5 ---\none\n--- Slide 2 of 5 ---\ntwo\n" {
		t.Errorf("a batch: %+v, %v", res, err)
	}
	if err := Assemble(&res, Pages{Total: 2, First: 1, Text: []string{"", "x"}, Names: []string{"Empty", "Costs"}}, 1, 0, 10000, "Sheet"); err != nil ||
		!strings.HasPrefix(res.Text, "--- Sheet 1 of 2: Empty ---\n[no text on this sheet") || !strings.Contains(res.Text, "--- Sheet 2 of 2: Costs ---\nx\n") {
		t.Errorf("sheets: %q, %v", res.Text, err)
	}
}

func TestReaderReadsTextAndHTML(t *testing.T) {
	dir := t.TempDir()
	r := New(Config{TempDir: dir})
	defer r.Close()
	long := strings.Repeat("Zeile mit Umlauten äöü und mehr.\n", 2000)
	write(t, dir, "long.txt", long)
	f := open(t, dir, "long.txt")
	var got strings.Builder
	for _, a := range readAll(t, func(page, offset int) protocol.DocumentResult {
		res, err := r.Read(context.Background(), f, "long.txt", protocol.ReadDocumentParams{Page: page, Offset: offset, MaxChars: 5000})
		if err != nil || res.Format != "text" || res.Pages != 1 || len(res.Text) > 5000 {
			t.Fatalf("%+v, %v", res, err)
		}
		return res
	}) {
		got.WriteString(a.Text)
	}
	if got.String() != long {
		t.Fatal("the text read back in parts is not the file")
	}

	write(t, dir, "page.html", `<!DOCTYPE html><html><head><title>T</title><style>p{}</style><script>alert("no")</script></head>
<body><h1>Prices</h1><p>All prices in <b>EUR</b>, see <a href="https://example.com/terms">terms</a>.</p>
<table><tr><th>Item</th><th>Price</th></tr><tr><td>Lamp, desk</td><td>32.50</td></tr><tr><td>Say "hi"</td><td>1</td></tr></table>
<ul><li>one</li><li>two</li></ul>`+strings.Repeat("<div>", 100000)+`deep`+`</body></html>`)
	res, err := r.Read(context.Background(), open(t, dir, "page.html"), "page.html", protocol.ReadDocumentParams{})
	if err != nil || res.Format != "html" {
		t.Fatal(res, err)
	}
	for _, want := range []string{"Prices\n", "All prices in EUR , see terms <https://example.com/terms> .", "Item,Price\n\"Lamp, desk\",32.50\n\"Say \"\"hi\"\"\",1\n", "- one\n- two", "deep"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("HTML text lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "alert") || strings.Contains(res.Text, "p{}") {
		t.Errorf("HTML text shows a script or a style:\n%s", res.Text)
	}

	write(t, dir, "blob.bin", "\x00\x01\x02binary")
	if _, err := r.Read(context.Background(), open(t, dir, "blob.bin"), "blob.bin", protocol.ReadDocumentParams{}); err == nil || !strings.Contains(err.Error(), "not text, a document or an image") {
		t.Errorf("binary: %v", err)
	}
	if _, err := r.Read(context.Background(), open(t, dir, "long.txt"), "report.docx", protocol.ReadDocumentParams{Page: -1}); err == nil {
		t.Error("a negative page was taken")
	}
	// Without an extractor, a PDF is refused in words.
	write(t, dir, "a.pdf", "%PDF-1.4\n")
	if _, err := r.Read(context.Background(), open(t, dir, "a.pdf"), "a.pdf", protocol.ReadDocumentParams{}); err == nil || !strings.Contains(err.Error(), "cannot read PDF") {
		t.Errorf("a PDF without tools: %v", err)
	}
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestCheckZipRefusesABomb(t *testing.T) {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	w, _ := z.Create("word/document.xml")
	zeros := make([]byte, 1<<20)
	for range 64 {
		w.Write(zeros)
	}
	z.Close()
	err := CheckZip(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "bomb.docx")
	if err == nil || !strings.Contains(err.Error(), "word/document.xml would expand") || !strings.Contains(err.Error(), "zip bomb") {
		t.Fatalf("bomb: %v", err)
	}
	fine := zipOf(t, map[string]string{"word/document.xml": strings.Repeat("<w:p>text</w:p>", 1000)})
	if err := CheckZip(bytes.NewReader(fine), int64(len(fine)), "fine.docx"); err != nil {
		t.Fatalf("a small document: %v", err)
	}
	if err := CheckZip(bytes.NewReader([]byte("PK\x03\x04junk")), 8, "junk.docx"); err == nil {
		t.Fatal("junk read as a zip")
	}
}

func TestFitImages(t *testing.T) {
	wide := image.NewRGBA(image.Rect(0, 0, 3000, 100))
	for x := range 3000 {
		for y := range 100 {
			wide.Set(x, y, color.RGBA{R: 200, A: 255})
		}
	}
	var p bytes.Buffer
	png.Encode(&p, wide)
	img, err := Fit(p.Bytes(), PNG, "wide.png", 1568, 1568)
	if err != nil || img.Format != "png" || img.Width != 1568 || img.Height != 52 {
		t.Fatalf("%+v, %v", img, err)
	}
	back, _ := png.Decode(bytes.NewReader(img.Data))
	if r, g, _, _ := back.At(700, 20).RGBA(); r>>8 != 200 || g != 0 {
		t.Errorf("the fitted image's colour is %v", back.At(700, 20))
	}
	var gi bytes.Buffer
	gif.Encode(&gi, image.NewPaletted(image.Rect(0, 0, 40, 30), color.Palette{color.White, color.Black}), nil)
	if img, err := Fit(gi.Bytes(), GIF, "a.gif", 0, 0); err != nil || img.Format != "png" || img.Width != 40 {
		t.Errorf("gif: %+v, %v", img, err)
	}
	// A lossless 1x1 WebP.
	webp := []byte("RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00")
	if img, err := Fit(webp, WebP, "a.webp", 0, 0); err != nil || img.Width != 1 || img.Height != 1 {
		t.Errorf("webp: %+v, %v", img, err)
	}
	// A PNG header that claims 40000x40000 pixels is refused before any
	// decoding (it would take 6 GB).
	claim := p.Bytes()[:33]
	claim = append([]byte(nil), claim...)
	copy(claim[16:24], []byte{0, 0, 0x9c, 0x40, 0, 0, 0x9c, 0x40})
	binary.BigEndian.PutUint32(claim[29:33], crc32.ChecksumIEEE(claim[12:29]))
	start := time.Now()
	if _, err := Fit(claim, PNG, "claim.png", 0, 0); err == nil || !strings.Contains(err.Error(), "40000x40000") || time.Since(start) > time.Second {
		t.Errorf("a huge claimed image: %v after %s", err, time.Since(start))
	}
}

func TestRunBoundsTheTool(t *testing.T) {
	ctx := context.Background()
	base := Command{Name: "tool", Timeout: 5 * time.Second, OutputCap: 1 << 20, What: "reading x"}
	c := base
	c.Args = []string{"sh", "-c", "yes"}
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "tool wrote more than 1.0 MB reading x") {
		t.Errorf("output cap: %v", err)
	}
	c = base
	c.Timeout, c.Args = 300*time.Millisecond, []string{"sh", "-c", "sleep 30 & sleep 30"}
	start := time.Now()
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "did not finish within 300ms reading x") || time.Since(start) > 3*time.Second {
		t.Errorf("time limit: %v after %s", err, time.Since(start))
	}
	c = base
	c.Args = []string{"sh", "-c", "echo bad file >&2; exit 3"}
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "tool failed reading x (exit status 3): bad file") {
		t.Errorf("exit status: %v", err)
	}
	c = base
	c.Args = []string{"sh", "-c", "kill -SEGV $$"}
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Errorf("crash: %v", err)
	}
	c = base
	c.Args = []string{"no-such-tool-here"}
	if _, err := Run(ctx, c); err == nil || !strings.Contains(err.Error(), "has no tool") {
		t.Errorf("missing tool: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	c = base
	c.Args = []string{"sleep", "30"}
	start = time.Now()
	if _, err := Run(cctx, c); err != context.Canceled || time.Since(start) > 3*time.Second {
		t.Errorf("cancel: %v after %s", err, time.Since(start))
	}
	c = base
	c.Args = []string{"sh", "-c", "printf 'page one\\fpage two\\f'"}
	if out, err := Run(ctx, c); err != nil || string(out.Stdout) != "page one\fpage two\f" {
		t.Errorf("a plain run: %q, %v", out.Stdout, err)
	}
}
