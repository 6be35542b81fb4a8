package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/docfiles"
)

// calls is an assistant message that calls read_file once for each of
// args (by path, page, offset), with ids c1, c2, ...
func calls(args ...map[string]any) openai.ChatCompletionMessage {
	m := openai.ChatCompletionMessage{Role: "assistant"}
	for i, a := range args {
		b, _ := json.Marshal(a)
		m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: fmt.Sprintf("c%d", i+1), Type: "function", Function: openai.FunctionCall{Name: "read_file", Arguments: string(b)}})
	}
	return m
}

// sentRequest is a chat request the scripted server received: its tool
// messages by call id, and the images of its last user message, decoded.
type sentRequest struct {
	results map[string]string
	images  []sentImage
	all     int // images in the whole request
}

type sentImage struct {
	format string
	img    image.Image
}

func parseRequest(t *testing.T, body string) sentRequest {
	t.Helper()
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	out := sentRequest{results: map[string]string{}}
	for i, m := range req.Messages {
		if m.Role == "tool" {
			out.results[m.ToolCallID] = m.Content
		}
		for _, p := range m.MultiContent {
			if p.Type != openai.ChatMessagePartTypeImageURL {
				continue
			}
			out.all++
			if i != len(req.Messages)-1 {
				continue
			}
			media, data, ok := strings.Cut(strings.TrimPrefix(p.ImageURL.URL, "data:"), ";base64,")
			raw, err := base64.StdEncoding.DecodeString(data)
			if !ok || err != nil {
				t.Fatalf("image URL %.60s", p.ImageURL.URL)
			}
			img, format, err := image.Decode(bytes.NewReader(raw))
			if err != nil || "image/"+format != media {
				t.Fatalf("an image sent as %s decodes as %s: %v", media, format, err)
			}
			out.images = append(out.images, sentImage{format: format, img: img})
		}
	}
	return out
}

// solid is a w x h image of one colour.
func solid(w, h int, c color.Color) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	return img
}

// near reports whether img's centre is about c (JPEG and HEIC are lossy).
func near(img image.Image, c color.RGBA) bool {
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Dx()/2, b.Dy()/2).RGBA()
	d := func(a uint32, b uint8) bool { return int(a>>8)-int(b) < 40 && int(b)-int(a>>8) < 40 }
	return d(r, c.R) && d(g, c.G) && d(bl, c.B)
}

// TestReadFileReadsDocumentsAndImages: in a real sandbox, the model's
// read_file reads the eval suite's PDFs, Office and OpenDocument files
// (made here with LibreOffice from OpenDocument written as XML), RTF and
// HTML as text (spreadsheets a sheet a page, as CSV; a page asked for by
// number), and shows PNG, JPEG and HEIC files as images, within the
// provider's limits and the three-image window: the scripted model's
// requests hold what a user would check.
func TestReadFileReadsDocumentsAndImages(t *testing.T) {
	m, g, data := startGuest(t, "docs")
	if !g.Has(protocol.CapDocuments) {
		t.Fatalf("the guest does not announce %s: %v", protocol.CapDocuments, g.Hello().Capabilities)
	}
	inbox := filepath.Join(m.Spec().SharedDir(), "inbox")
	suite := filepath.Join("..", "eval", "suites", "linux-desktop", "files", "pdf")
	for _, name := range []string{"invoice.pdf", "minutes.pdf"} {
		b, err := os.ReadFile(filepath.Join(suite, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, inbox, name, b)
	}
	made := t.TempDir()
	odt, err := docfiles.ODT("Quarterly report", "Sales rose by 12 percent.", "Costs stayed flat.")
	must(t, err)
	ods, err := docfiles.ODS(docfiles.Sheet{Name: "Sales", Rows: [][]string{{"Region", "Q1"}, {"North", "10"}, {"South, East", "3.5"}}},
		docfiles.Sheet{Name: "Costs", Rows: [][]string{{"Item", "Cost"}, {"Rent", "1200"}}})
	must(t, err)
	odp, err := docfiles.ODP("Launch plan", "Ship on 3 June")
	must(t, err)
	for name, b := range map[string][]byte{"report.odt": odt, "book.ods": ods, "deck.odp": odp} {
		writeFile(t, made, name, b)
		writeFile(t, inbox, name, b)
	}
	for format, src := range map[string]string{"docx": "report.odt", "rtf": "report.odt", "xlsx": "book.ods", "pptx": "deck.odp"} {
		out, err := docfiles.Convert(context.Background(), made, format, filepath.Join(made, src))
		must(t, err)
		b, err := os.ReadFile(out[0])
		must(t, err)
		writeFile(t, inbox, filepath.Base(out[0]), b)
	}
	writeFile(t, inbox, "prices.html", []byte(`<!DOCTYPE html><html><head><script>var secret = 1;</script></head><body><h1>Prices</h1>`+
		`<table><tr><th>Item</th><th>Price</th></tr><tr><td>Lamp, desk</td><td>32.50</td></tr></table></body></html>`))
	var red, blue bytes.Buffer
	must(t, png.Encode(&red, solid(300, 200, color.RGBA{R: 255, A: 255})))
	must(t, jpeg.Encode(&blue, solid(3000, 2000, color.RGBA{B: 255, A: 255}), nil))
	writeFile(t, inbox, "red.png", red.Bytes())
	writeFile(t, inbox, "blue.jpg", blue.Bytes())
	var green bytes.Buffer
	must(t, png.Encode(&green, solid(64, 48, color.RGBA{G: 255, A: 255})))
	writeFile(t, made, "green.png", green.Bytes())
	if out, err := exec.Command("heif-enc", filepath.Join(made, "green.png"), "-o", filepath.Join(made, "green.heic")).CombinedOutput(); err != nil {
		t.Fatalf("heif-enc (libheif-examples, scripts/deps): %v: %s", err, out)
	}
	heic, err := os.ReadFile(filepath.Join(made, "green.heic"))
	must(t, err)
	writeFile(t, inbox, "green.heic", heic)

	verdict, _ := json.Marshal(llm.Verdict{Success: true, Summary: "Read them all."})
	read := func(path string, more ...any) map[string]any {
		a := map[string]any{"path": "inbox/" + path}
		for i := 0; i+1 < len(more); i += 2 {
			a[more[i].(string)] = more[i+1]
		}
		return a
	}
	docs := []map[string]any{read("invoice.pdf"), read("minutes.pdf", "page", 2), read("report.docx"), read("report.odt"), read("report.rtf"),
		read("book.xlsx"), read("book.ods"), read("deck.pptx"), read("deck.odp"), read("prices.html"), read("red.png"), read("blue.jpg")}
	s := &scripted{answers: []openai.ChatCompletionMessage{
		calls(docs...),
		calls(read("green.heic")),
		{Role: "assistant", Content: "I read them."},
		{Role: "assistant", Content: string(verdict)},
	}}
	r, done := startRunner(t, g, data, s, "docs", config.ToolPolicy{})
	var res = <-done
	if res.Status != store.StatusCompleted {
		t.Fatalf("result %+v (steps %d)", res, r.Steps())
	}
	reqs := s.requests()
	if len(reqs) < 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	second := parseRequest(t, reqs[1])
	sheets := "--- Sheet 1 of 2: Sales ---\nRegion,Q1\nNorth,10\n\"South, East\",3.5\n--- Sheet 2 of 2: Costs ---\nItem,Cost\nRent,1200"
	report := []string{"Quarterly report", "Sales rose by 12 percent.", "Costs stayed flat."}
	for id, want := range map[string][]string{
		"c1":  {"inbox/invoice.pdf: PDF, ", "Invoice number: INV-2024-0117", "Total due (EUR)", "1,036.08"},
		"c2":  {"inbox/minutes.pdf: PDF, ", "2 pages. From page 2, byte 0:", "--- Page 2 of 2 ---", "4. The membership fee stays at 25 pounds a year."},
		"c3":  append([]string{"inbox/report.docx: DOCX, "}, report...),
		"c4":  append([]string{"inbox/report.odt: ODT, "}, report...),
		"c5":  append([]string{"inbox/report.rtf: RTF, "}, report...),
		"c6":  {"inbox/book.xlsx: XLSX, ", "2 sheets:", sheets},
		"c7":  {"inbox/book.ods: ODS, ", "2 sheets:", sheets},
		"c8":  {"inbox/deck.pptx: PPTX, ", "2 slides:", "--- Slide 1 of 2 ---\nLaunch plan", "--- Slide 2 of 2 ---\nShip on 3 June"},
		"c9":  {"inbox/deck.odp: ODP, ", "--- Slide 1 of 2 ---\nLaunch plan", "--- Slide 2 of 2 ---\nShip on 3 June"},
		"c10": {"inbox/prices.html: HTML, ", "Prices\nItem,Price\n\"Lamp, desk\",32.50"},
		"c11": {"inbox/red.png: PNG, ", "an image of 300x200 pixels:"},
		"c12": {"inbox/blue.jpg: JPEG, ", "an image of 3000x2000 pixels, shown scaled to 1568x1045:"},
	} {
		got, ok := second.results[id]
		if !ok {
			t.Errorf("no result for %s (%v)", id, docs)
			continue
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s's result lacks %q:\n%s", id, w, got)
			}
		}
		if strings.HasPrefix(got, "Error") || strings.Contains(got, "secret") || strings.Contains(got, "Riverside Garden Club") {
			t.Errorf("%s's result: %s", id, got)
		}
	}
	// The two image files and the screen, in the message after the tool
	// messages: three images, the window's most.
	if len(second.images) != 3 || second.all != 3 {
		t.Fatalf("the second request shows %d images in its last message, %d in all; want the two files and the screen", len(second.images), second.all)
	}
	if b := second.images[0].img.Bounds(); second.images[0].format != "png" || b.Dx() != 300 || b.Dy() != 200 || !near(second.images[0].img, color.RGBA{R: 255}) {
		t.Errorf("red.png was shown as a %s of %v", second.images[0].format, b)
	}
	if b := second.images[1].img.Bounds(); second.images[1].format != "jpeg" || b.Dx() != 1568 || b.Dy() != 1045 || !near(second.images[1].img, color.RGBA{B: 255}) {
		t.Errorf("blue.jpg was shown as a %s of %v", second.images[1].format, b)
	}
	third := parseRequest(t, reqs[2])
	if !strings.Contains(third.results["c1"], "inbox/green.heic: HEIC, ") || !strings.Contains(third.results["c1"], "an image of 64x48 pixels:") {
		t.Errorf("green.heic: %s", third.results["c1"])
	}
	if len(third.images) != 2 || third.all > 3 || third.images[0].img.Bounds().Dx() != 64 || !near(third.images[0].img, color.RGBA{G: 255}) {
		t.Errorf("the third request shows %d images in its last message (%d in all), the first %v", len(third.images), third.all, third.images)
	}
}

func writeFile(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostileDocumentsEndInClearErrors, in a real sandbox: each hostile
// file ends in an error that says what it met, within its time limit,
// and nothing of it reaches a parser on the host; a read the task
// cancels stops its tool at once.
func TestHostileDocumentsEndInClearErrors(t *testing.T) {
	m, g, _ := startGuest(t, "hostile")
	inbox := filepath.Join(m.Spec().SharedDir(), "inbox")
	bomb, err := docfiles.ZipBombDOCX(300)
	must(t, err)
	writeFile(t, inbox, "bomb.docx", bomb)
	writeFile(t, inbox, "nested.pdf", docfiles.NestedPDF(100_000))
	writeFile(t, inbox, "billion.pdf", docfiles.FanOutPDF(9, 10))
	// A PDF of 1 GB (sparse: it costs no disk).
	huge, err := os.Create(filepath.Join(inbox, "huge.pdf"))
	must(t, err)
	huge.WriteString("%PDF-1.4\n")
	must(t, huge.Truncate(1<<30))
	huge.Close()

	for _, c := range []struct {
		file, want string
		within     time.Duration
	}{
		{"bomb.docx", "word/document.xml would expand", 5 * time.Second},
		{"nested.pdf", "pdftotext read no text reading page 1 of inbox/nested.pdf and reported errors: the PDF is damaged or hostile", 15 * time.Second},
		{"huge.pdf", "inbox/huge.pdf is 1.0 GB, more than the 128.0 MB read_file reads", 5 * time.Second},
		{"billion.pdf", "pdftotext did not finish within 30s reading page 1 of inbox/billion.pdf", 40 * time.Second},
	} {
		t.Run(c.file, func(t *testing.T) {
			start := time.Now()
			_, err := g.ReadDocument(context.Background(), protocol.ReadDocumentParams{Path: "inbox/" + c.file})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("read %s: %v, want an error saying %q", c.file, err, c.want)
			}
			if took > c.within {
				t.Errorf("read %s took %s, more than %s", c.file, took, c.within)
			}
			t.Logf("%s: %v (%s)", c.file, err, took.Round(time.Millisecond))
		})
	}

	// Cancelled (the task's stop): the call ends at once and pdftotext
	// is gone.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	start := time.Now()
	if _, err := g.ReadDocument(ctx, protocol.ReadDocumentParams{Path: "inbox/billion.pdf"}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a cancelled read: %v after %s", err, time.Since(start))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		sh, err := g.Shell(context.Background(), protocol.ShellParams{Command: "pgrep -x pdftotext || echo none"})
		if err == nil && strings.TrimSpace(sh.Stdout) == "none" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pdftotext still runs after the read was cancelled: %+v, %v", sh, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
