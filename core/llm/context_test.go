package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"
	"testing"
)

// shot returns a PNG screenshot of w x h pixels.
func shot(t *testing.T, w, h int) Block {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	img, err := NewImage("png", b.Bytes(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ImageBlock(img)
}

// TestWindowKeepsThePrefix: over 40 steps of an agent's conversation, the
// request holds 1 to 3 images, and in 2 steps out of 3 every message of
// the previous request is sent again byte for byte (the provider's prompt
// cache hits); the dropped images go 3 at a time.
func TestWindowKeepsThePrefix(t *testing.T) {
	img := shot(t, 64, 40)
	messages := []Message{UserText("Task: x")}
	var prev [][]byte
	kept := 0
	for step := 1; step <= 40; step++ {
		messages = append(messages, UserMessage(Text("Step"), img))
		w := Window(messages, 3)
		images := countImages(w)
		var cur [][]byte
		for _, m := range chatMessages(&Request{System: "system", Messages: w}) {
			b, _ := json.Marshal(m)
			cur = append(cur, b)
		}
		if images < 1 || images > 3 {
			t.Fatalf("step %d sends %d images", step, images)
		}
		same := prev != nil
		for i := range prev {
			if !bytes.Equal(prev[i], cur[i]) {
				same = false
				break
			}
		}
		if same {
			kept++
		}
		prev = cur
		messages = append(messages, AssistantText("ok"))
	}
	// Steps 2..40: the prefix breaks at steps 4, 7, ..., 40 (13 of 39).
	if kept != 26 {
		t.Fatalf("the previous request was sent again whole at %d of 39 steps, want 26", kept)
	}
}

// TestWindowDropsNextSaysWhatTheNextRequestDrops: for each image window
// (1 to 3 screenshots), WindowDropsNext says the next step's request, one
// screenshot on, sends none of the images this one sends, exactly when it
// does: a prompt cache is told not to keep what is never read again; and
// WindowStartsChunk says a request sends its newest screenshot alone.
func TestWindowDropsNextSaysWhatTheNextRequestDrops(t *testing.T) {
	// images are the data of the images a request sends.
	images := func(msgs []Message) []string {
		var out []string
		for _, m := range msgs {
			for _, b := range m.Content {
				if b.Type == BlockImage {
					out = append(out, b.Image.Data)
				}
			}
		}
		return out
	}
	for keep := 1; keep <= 3; keep++ {
		messages := []Message{UserText("Task: x"), UserMessage(Text("Step 1"), shot(t, 64, 40))}
		for step := 2; step <= 12; step++ {
			next := append(slices.Clone(messages), AssistantText("ok"), UserMessage(Text("Step"), shot(t, 64+step, 40)))
			later := images(Window(next, keep))
			overlap := slices.ContainsFunc(images(Window(messages, keep)), func(data string) bool { return slices.Contains(later, data) })
			if got := WindowDropsNext(messages, keep); got == overlap {
				t.Errorf("keep %d, step %d: WindowDropsNext says %v, but the next request sends %s of this one's images", keep, step, got, map[bool]string{true: "some", false: "none"}[overlap])
			}
			if starts := len(images(Window(next, keep))) == 1; WindowStartsChunk(next, keep) != starts {
				t.Errorf("keep %d, step %d: WindowStartsChunk says %v, but the request sends %d images", keep, step, !starts, len(later))
			}
			messages = next
		}
	}
}

// TestWindowCutsOldResults: over 40 steps each answered by a 5,000-byte
// tool result, the results of the window's screens and the 6 steps before
// them go whole and older ones are cut to 1,500 bytes with a note of what
// was left out; the cut moves with the image window, so the prefix still
// breaks only where screenshots drop (13 of 39 steps), and with no
// screenshots at all at most once in 3 steps. The conversation itself keeps every result
// whole.
func TestWindowCutsOldResults(t *testing.T) {
	for _, withImages := range []bool{true, false} {
		img := shot(t, 64, 40)
		messages := []Message{UserText("Task: x")}
		var prev [][]byte
		kept, lastBreak := 0, -3
		for step := 1; step <= 40; step++ {
			m := UserMessage(Text("Step"))
			if step > 1 {
				id := fmt.Sprint("c", step-1)
				m.Content = append([]Block{{Type: BlockToolResult, Result: &ToolResult{CallID: id, Content: []Block{Text(strings.Repeat(fmt.Sprint(step-1, " "), 2500)[:5000])}}}}, m.Content...)
			}
			if withImages {
				m.Content = append(m.Content, img)
			}
			messages = append(messages, m)
			w := Window(messages, 3)
			var cur [][]byte
			for _, m := range chatMessages(&Request{System: "system", Messages: w}) {
				b, _ := json.Marshal(m)
				cur = append(cur, b)
			}
			same := prev != nil
			for i := range prev {
				if !bytes.Equal(prev[i], cur[i]) {
					same = false
					break
				}
			}
			switch {
			case same:
				kept++
			case prev != nil:
				if step-lastBreak < 3 {
					t.Fatalf("images %v: the prefix broke at steps %d and %d", withImages, lastBreak, step)
				}
				lastBreak = step
			}
			prev = cur
			whole, cut := 0, 0
			for i, m := range w {
				for _, b := range m.Content {
					if b.Type != BlockToolResult {
						continue
					}
					switch text := b.Result.Text(); {
					case len(text) == 5000:
						whole++
					case len(text) < 1700 && strings.HasSuffix(text, "[… 3500 more bytes of this earlier result left out to keep the conversation short; call the tool again to see them]"):
						cut++
						if whole > 0 {
							t.Fatalf("step %d: message %d's result is cut after a whole one", step, i)
						}
					default:
						t.Fatalf("step %d: a result of %d bytes: %.80q", step, len(text), text)
					}
				}
			}
			// The window's 1 to 3 screens and the 6 steps before them.
			if step > 1 && (whole < min(step-1, 7) || whole > 9 || whole+cut != step-1) {
				t.Fatalf("images %v, step %d: %d results whole, %d cut", withImages, step, whole, cut)
			}
			messages = append(messages, Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, Call: &ToolCall{ID: fmt.Sprint("c", step), Name: "run_shell", Args: json.RawMessage(`{}`)}}}})
		}
		// With screenshots the prefix breaks where they drop; without, no
		// more often (and only once results are cut).
		if (withImages && kept != 26) || kept < 26 {
			t.Fatalf("images %v: the previous request was sent again whole at %d of 39 steps, want 26", withImages, kept)
		}
		for _, m := range messages {
			for _, b := range m.Content {
				if b.Type == BlockToolResult && len(b.Result.Text()) != 5000 {
					t.Fatal("Window cut a result of the conversation itself")
				}
			}
		}
	}
}

// TestWindowShowsTheImagesJustRead: image files read_file showed count
// against the window like screenshots, and the last message's images
// (the files just read and the screen) are always sent, three at most.
func TestWindowShowsTheImagesJustRead(t *testing.T) {
	shotImg, file := shot(t, 64, 40), shot(t, 30, 20)
	result := func(id string, images ...Block) Block {
		return Block{Type: BlockToolResult, Result: &ToolResult{CallID: id, Content: append([]Block{Text(id + ": an image")}, images...)}}
	}
	call := func(ids ...string) Message {
		m := Message{Role: RoleAssistant}
		for _, id := range ids {
			m.Content = append(m.Content, Block{Type: BlockToolCall, Call: &ToolCall{ID: id, Name: "read_file", Args: json.RawMessage(`{}`)}})
		}
		return m
	}
	messages := []Message{UserText("Task: x"), UserMessage(Text("Step 1"), shotImg), call("a", "b"),
		UserMessage(result("a", file), result("b", file), Text("Step 2"), shotImg)}
	// Four images: the chunked window alone would send one (the screen).
	w := Window(messages, 3)
	if n := countImages(w); n != 3 || countImages(w[len(w)-1:]) != 3 {
		t.Fatalf("%d images sent, %d of them the last message's; want its 3", n, countImages(w[len(w)-1:]))
	}
	// Four in the last message: the last three of them.
	messages = append(messages, call("c", "d", "e"), UserMessage(result("c", file), result("d", file), result("e", file), Text("Step 3"), shotImg))
	w = Window(messages, 3)
	last := w[len(w)-1]
	if countImages(w) != 3 || last.Content[0].Result.Content[1].Type != BlockText || last.Content[1].Result.Content[1].Type != BlockImage {
		t.Fatalf("%d images sent: %+v", countImages(w), last.Content[0].Result.Content)
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, c := range []struct {
		w, h, want int
	}{{1280, 800, 1105}, {640, 400, 425}, {3000, 3000, 765}} {
		got := EstimateTokens([]Message{UserMessage(shot(t, c.w, c.h))})
		if got != c.want+messageOverhead {
			t.Errorf("%dx%d: %d tokens, want %d", c.w, c.h, got, c.want+messageOverhead)
		}
	}
	if got := EstimateTokens([]Message{UserText(string(make([]byte, 4000)))}); got != 1000+messageOverhead {
		t.Errorf("4000 bytes of text: %d tokens", got)
	}
}

func TestIsContextOverflow(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 400, Code: "context_length_exceeded", Message: "x"}, true},
		{&Error{Status: 400, Message: "the provider refused the request (HTTP 400): This model's maximum context length is 8192 tokens"}, true},
		{&Error{Status: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, true},
		{&Error{Status: 413, Message: "Request too large: too many tokens"}, true},
		{&Error{Status: 400, Message: "invalid image"}, false},
		{&Error{Status: 429, Message: "too many tokens per minute"}, false},
		{errors.New("maximum context length"), false},
	} {
		if got := IsContextOverflow(c.err); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

func TestContextWindow(t *testing.T) {
	for _, c := range []struct {
		model  string
		listed int
		want   int
	}{{"gpt-4.1-mini", 0, 1_047_576}, {"openai/gpt-4o", 0, 128_000}, {"anthropic/claude-sonnet-4.5", 0, 200_000}, {"local-model", 32_768, 32_768}, {"llama3", 0, DefaultContextTokens},
		{"computer-use-preview", 0, 8_192}, {"computer-use-preview-2025-03-11", 0, 8_192}} {
		if got := ContextWindow(c.model, c.listed); got != c.want {
			t.Errorf("%s (%d listed): %d, want %d", c.model, c.listed, got, c.want)
		}
	}
}

// TestDisplayForFitsXGA: a screen larger than XGA's box is declared
// fitted in it with its aspect ratio, the size of the screenshots a model
// is billed for (Claude: 874 tokens for 1024x640, not 1,366 for 1280x800;
// OpenAI: 4 tiles, not 6); a smaller one as it is.
func TestDisplayForFitsXGA(t *testing.T) {
	for _, c := range []struct{ w, h, dw, dh int }{
		{1280, 800, 1024, 640}, {1440, 900, 1024, 640}, {2880, 1800, 1024, 640}, {1920, 1080, 1024, 576}, {1366, 768, 1024, 576},
		{1600, 1200, 1024, 768}, {1024, 768, 1024, 768}, {800, 600, 800, 600}, {1080, 1920, 432, 768}, {0, 0, 1024, 640},
	} {
		if d := DisplayFor(c.w, c.h); d.Width != c.dw || d.Height != c.dh {
			t.Errorf("%dx%d is declared as %dx%d, want %dx%d", c.w, c.h, d.Width, d.Height, c.dw, c.dh)
		}
	}
	if n := claudeImageTokens(1024, 640); n != 873 {
		t.Errorf("a 1024x640 screenshot costs Claude %d tokens", n)
	}
	if n := imageTokens(1024, 640); n != 765 {
		t.Errorf("a 1024x640 screenshot costs %d tokens by OpenAI's rule", n)
	}
}

// TestForgetOldImagesKeepsWhatIsSent: after forgetting, the requests the
// window makes are the same, byte for byte, as before, and the data of
// the images they no longer send is gone.
func TestForgetOldImagesKeepsWhatIsSent(t *testing.T) {
	var msgs []Message
	for i := range 10 {
		img := shot(t, 64+i, 40)
		if i%2 == 0 {
			msgs = append(msgs, UserMessage(Text("step"), img))
		} else {
			msgs = append(msgs, UserMessage(Block{Type: BlockToolResult, Result: &ToolResult{CallID: "c", Content: []Block{img}}}))
		}
		msgs = append(msgs, AssistantText("ok"))
	}
	before, _ := json.Marshal(chatMessages(&Request{Messages: Window(msgs, 3)}))
	ForgetOldImages(msgs, 3)
	after, _ := json.Marshal(chatMessages(&Request{Messages: Window(msgs, 3)}))
	if !bytes.Equal(before, after) {
		t.Fatal("forgetting changed what is sent")
	}
	kept := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			for _, c := range append([]Block{b}, resultContent(b)...) {
				if c.Type == BlockImage && c.Image.Data != "" {
					kept++
				}
			}
		}
	}
	if kept != 3 || countImages(msgs) != 10 {
		t.Fatalf("%d images keep their data, %d are images; want 3 and 10", kept, countImages(msgs))
	}
}

func resultContent(b Block) []Block {
	if b.Type == BlockToolResult {
		return b.Result.Content
	}
	return nil
}

// TestNormalizeAnswersEveryCall: a call without a result gets one that
// says so, a result whose call was condensed away becomes words, results
// lead their message, and a sound conversation is returned as it is.
func TestNormalizeAnswersEveryCall(t *testing.T) {
	call := func(id string) Block {
		return Block{Type: BlockToolCall, Call: &ToolCall{ID: id, Name: "wait", Args: json.RawMessage(`{}`)}}
	}
	result := func(id, text string) Block {
		return Block{Type: BlockToolResult, Result: &ToolResult{CallID: id, Content: []Block{Text(text)}}}
	}
	sound := []Message{UserText("task"), {Role: RoleAssistant, Content: []Block{call("a")}}, UserMessage(result("a", "done"), Text("step 2"))}
	if got := normalize(sound); &got[0] != &sound[0] {
		t.Fatal("a sound conversation was copied")
	}
	broken := []Message{
		UserText("task"), UserMessage(result("gone", "an old result"), Text("step 5")),
		{Role: RoleAssistant, Content: []Block{call("b"), call("c")}}, UserMessage(Text("step 6"), result("b", "done")),
		{Role: RoleAssistant, Content: []Block{call("d")}},
	}
	got := normalize(broken)
	if len(got) != 6 {
		t.Fatalf("%d messages: %+v", len(got), got)
	}
	if b := got[1].Content; b[0].Text != earlierResultNote+" an old result" || b[1].Text != "step 5" {
		t.Errorf("an orphan result: %+v", b)
	}
	if b := got[3].Content; b[0].Result.CallID != "b" || b[1].Result.CallID != "c" || b[1].Result.Text() != noResultNote || b[2].Text != "step 6" {
		t.Errorf("results: %+v", b)
	}
	if b := got[5]; b.Role != RoleUser || b.Content[0].Result.CallID != "d" {
		t.Errorf("the last call's result: %+v", b)
	}
	if broken[1].Content[0].Type != BlockToolResult {
		t.Error("normalize modified its input")
	}
}
