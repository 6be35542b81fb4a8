package trace

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

func pngBytes() []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2)))
	return b.Bytes()
}

func TestWriteReadExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s1")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	shot, err := w.Screenshot("png", pngBytes())
	if err != nil || shot != filepath.Join("screenshots", "0001.png") {
		t.Fatalf("screenshot %q, %v", shot, err)
	}
	for _, e := range []Event{
		{Type: "status_change", Summary: "Task started", Status: "running"},
		{Type: "screenshot", Summary: "Screen captured", Screenshot: shot, Step: 1},
		{Type: "llm_response", Summary: "Clicking <Save>", PromptTokens: 1200, CompletionTokens: 80, Step: 1},
		{Type: "tool_call_result", Tool: "mouse_click", Summary: "clicked at (10, 20)", Details: "ok | done", Step: 1},
	} {
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendConversation(map[string]string{"role": "system", "content": "You operate"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendConversation(map[string]string{"role": "user", "content": "hi"}, map[string]string{"role": "assistant", "content": "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A crash mid-line leaves a partial last line: it is dropped, the rest read.
	for _, name := range []string{EventsFile, ConversationFile} {
		f, _ := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"seq":5,"type":"tool_ca`)
		f.Close()
	}
	s, err := Read(dir)
	if err != nil || len(s.Events) != 4 || !s.Truncated || s.Events[3].Seq != 4 {
		t.Fatalf("read %d events, truncated=%v, err %v", len(s.Events), s.Truncated, err)
	}
	var conv []map[string]string
	if err := json.Unmarshal(s.Conversation, &conv); err != nil || len(conv) != 3 || conv[0]["role"] != "system" || conv[2]["content"] != "ok" {
		t.Fatalf("conversation %s (%v), want the three messages in order", s.Conversation, err)
	}
	// Reopening continues the numbering.
	w2, _ := Create(dir)
	e, _ := w2.Append(Event{Type: "status_change", Summary: "done"})
	w2.Close()
	if e.Seq != 5 {
		t.Fatalf("continued seq = %d, want 5", e.Seq)
	}

	info := Info{TaskID: "t1", Title: "Save a | file", Description: "Type and save", Status: "completed", Summary: "Saved.", Model: "gpt-test", Started: time.Now()}
	var js bytes.Buffer
	if err := ExportJSON(&js, info, s); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Task       Info
		TokenUsage map[string]int
		Events     []Event
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.TokenUsage["total"] != 1280 || len(doc.Events) != 4 || doc.Task.Title != info.Title {
		t.Fatalf("json export %+v, %v", doc, err)
	}
	var md bytes.Buffer
	ExportMarkdown(&md, info, s)
	// The screenshots are in the one file (a link to the session folder
	// would lead nowhere beside the export).
	for _, want := range []string{"# Save a \\| file", "## Result\n\nSaved.", "![The screen at event 2](data:image/png;base64,", "1200 prompt, 80 completion"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "(screenshots/") {
		t.Errorf("markdown links a screenshot file it does not come with")
	}
	var html bytes.Buffer
	if err := ExportHTML(&html, info, s); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	for _, want := range []string{"data:image/png;base64,", `type="range"`, "Clicking &lt;Save&gt;", "1280 tokens"} {
		if !strings.Contains(h, want) {
			t.Errorf("html replay lacks %q", want)
		}
	}
	if strings.Contains(h, "<Save>") || strings.Contains(h, "screenshots/0001.png") {
		t.Error("the replay is not escaped or not self-contained")
	}
}

func TestScreenshotPathsStayInTheSession(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.png")
	os.WriteFile(secret, []byte("not for the export"), 0o600)
	s := Session{Dir: dir, Events: []Event{{Seq: 1, Type: "screenshot", Screenshot: "../" + filepath.Base(filepath.Dir(secret)) + "/secret.png"}}}
	var html bytes.Buffer
	ExportHTML(&html, Info{Title: "x"}, s)
	if strings.Contains(html.String(), "data:image") {
		t.Fatal("a screenshot path escaped the session folder")
	}
}

// TestReadsAnOlderTracesConversation: traces written before
// conversation.jsonl kept the conversation as one JSON array.
func TestReadsAnOlderTracesConversation(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, EventsFile), []byte(`{"seq":1,"type":"status_change","summary":"Task started"}`+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, legacyConversationFile), []byte(`[{"role":"user","content":"hi"}]`), 0o600)
	s, err := Read(dir)
	if err != nil || string(s.Conversation) != `[{"role":"user","content":"hi"}]` {
		t.Fatalf("conversation %s, err %v", s.Conversation, err)
	}
}

// TestContinuedTraceCutsATornLine: a trace continued after a crash that
// cut its last line short starts its next line on a line of its own, and
// reads back whole.
func TestContinuedTraceCutsATornLine(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(Event{Type: "status_change", Summary: "one"}); err != nil {
		t.Fatal(err)
	}
	w.AppendConversation(map[string]string{"role": "user"})
	w.Close()
	for _, name := range []string{EventsFile, ConversationFile} {
		f, _ := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"seq":2,"type":"stat`)
		f.Close()
	}
	w, err = Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(Event{Type: "status_change", Summary: "two"}); err != nil {
		t.Fatal(err)
	}
	w.AppendConversation(map[string]string{"role": "assistant"})
	w.Close()
	s, err := Read(dir)
	if err != nil || s.Truncated || len(s.Events) != 2 || s.Events[1].Summary != "two" || s.Events[1].Seq != 2 {
		t.Fatalf("events %+v (truncated %v), %v", s.Events, s.Truncated, err)
	}
	if string(s.Conversation) != `[{"role":"user"},{"role":"assistant"}]` {
		t.Fatalf("conversation %s", s.Conversation)
	}
}

// TestMarkdownExportShowsTextAsText: what a guest or a model wrote (escape
// bytes, a bidirectional override, raw HTML, a link, an image, a heading,
// a code fence) reads in a Markdown viewer as the text it is: no control
// byte, no element of its own, and a detail stays in its code block.
func TestMarkdownExportShowsTextAsText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s1")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "\x1b[2K\x1b[1Aok\u202etxt.exe <img src=https://tracker.example/x.png> [click](https://evil.example) ![i](https://tracker.example/i.png) <script>alert(1)</script>"
	for _, e := range []Event{
		{Type: "tool_call_result", Tool: "run_shell", Summary: "run_shell " + hostile, Step: 1,
			Details: "line one\n```\n# Not a heading\n<img src=https://tracker.example/d.png>\n````\n" + hostile},
	} {
		if _, err := w.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	s, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	info := Info{TaskID: "t1", Title: "# " + hostile, Description: "Do it\n# Heading?\n- list?\n" + hostile, Status: "completed",
		Summary: "Done. " + hostile + "\n1. first", Started: time.Now()}
	var md bytes.Buffer
	if err := ExportMarkdown(&md, info, s); err != nil {
		t.Fatal(err)
	}
	for i, r := range md.String() {
		if r < 0x20 && r != '\n' || r == 0x7f || r == '\u202e' {
			t.Fatalf("the export holds %U at %d", r, i)
		}
	}
	var html bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert(md.Bytes(), &html); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	// A viewer may make a bare address a link that shows it; never one
	// that shows other words, an image or an element of the guest's.
	for _, bad := range []string{"<img", "<script", ">click</a>", "<h1>Not a heading", "<h1>Heading", "<h2>Heading", "<li>list", "<li>first"} {
		if strings.Contains(h, bad) {
			t.Errorf("the rendered export has %q:\n%s", bad, h)
		}
	}
	// One code block, holding the whole detail.
	if n := strings.Count(h, "<pre><code>"); n != 1 {
		t.Fatalf("%d code blocks:\n%s", n, h)
	}
	code := h[strings.Index(h, "<pre><code>"):strings.Index(h, "</code></pre>")]
	for _, want := range []string{"# Not a heading", "\\x1b[2K", "\\u202etxt.exe", "&lt;script&gt;"} {
		if !strings.Contains(code, want) {
			t.Errorf("the detail's code block lacks %q:\n%s", want, code)
		}
	}
	for _, want := range []string{"[click](", "![i](", "\\x1b[1Aok", "&lt;img src="} {
		if !strings.Contains(h[:strings.Index(h, "<pre>")], want) {
			t.Errorf("the summary does not read %q:\n%s", want, h)
		}
	}
}

// TestSyncSoonSyncsOffThePath: SyncSoon returns before anything is synced,
// the background Sync follows within SyncDelay, and its failure is
// reported by the next call rather than lost.
func TestSyncSoonSyncsOffThePath(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Screenshot("png", pngBytes()); err != nil {
		t.Fatal(err)
	}
	pending := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.unsynced)
	}
	if err := w.SyncSoon(); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("SyncSoon synced on the caller's path: %d screenshots pending, want 1", n)
	}
	deadline := time.Now().Add(SyncDelay + 5*time.Second)
	for pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the screenshot was not synced within SyncDelay")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A background Sync that fails: its error reaches the next SyncSoon.
	w.mu.Lock()
	w.conv.Close()
	w.mu.Unlock()
	if err := w.SyncSoon(); err != nil {
		t.Fatalf("no Sync has failed yet: %v", err)
	}
	deadline = time.Now().Add(SyncDelay + 5*time.Second)
	for {
		w.mu.Lock()
		failed := w.lateErr != nil
		w.mu.Unlock()
		if failed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed background Sync left no error")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := w.SyncSoon(); err == nil || !strings.Contains(err.Error(), "sync trace") {
		t.Fatalf("SyncSoon after a failed background Sync = %v, want the sync error", err)
	}
	if err := w.SyncSoon(); err != nil {
		t.Fatalf("the error was reported twice: %v", err)
	}
	w.Close()
	if err := w.SyncSoon(); err != nil {
		t.Fatalf("SyncSoon after Close = %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.soon != nil {
		t.Fatal("SyncSoon scheduled a Sync of a closed trace")
	}
}
