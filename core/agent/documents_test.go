package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/store"
)

// lastTool is the content of a chat request's last tool message, and the
// images of its last message, decoded.
func lastTool(t *testing.T, body string) (string, []image.Image) {
	t.Helper()
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var text string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			text = m.Content
		}
	}
	var images []image.Image
	for _, p := range req.Messages[len(req.Messages)-1].MultiContent {
		if p.Type == openai.ChatMessagePartTypeImageURL {
			_, data, _ := strings.Cut(p.ImageURL.URL, ";base64,")
			raw, _ := base64.StdEncoding.DecodeString(data)
			img, _, err := image.Decode(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("an image that does not decode: %v", err)
			}
			images = append(images, img)
		}
	}
	return text, images
}

// TestReadFileGoesOnAndShowsImages: read_file gives a long text file a
// part at a time, saying where to go on, and shows an image file as an
// image after the results; a model without vision is told its size.
func TestReadFileGoesOnAndShowsImages(t *testing.T) {
	line := "Ledger line with ümlauts, and some more words to fill it.\n"
	long := strings.Repeat(line, 500) // 29,500 bytes: three reads
	pic := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for i := range pic.Pix {
		pic.Pix[i] = 0xff // white
	}
	pic.Set(0, 0, color.RGBA{R: 255, A: 255})
	var shot bytes.Buffer
	png.Encode(&shot, pic)

	for _, textOnly := range []bool{false, true} {
		l := newLLM(t, append([]turn{
			{calls: []openai.ToolCall{call("read_file", map[string]any{"path": "inbox/ledger.txt"})}},
			{calls: []openai.ToolCall{call("read_file", map[string]any{"path": "inbox/ledger.txt", "offset": 11977})}},
			{calls: []openai.ToolCall{call("read_file", map[string]any{"path": "inbox/pic.png"})}},
		}, done(true, "Read.")...)...)
		e := newEnv(t, l, func(t *Task) { t.TextOnly = textOnly })
		inbox := filepath.Join(e.m.Spec().SharedDir(), "inbox")
		os.MkdirAll(inbox, 0o755)
		os.WriteFile(filepath.Join(inbox, "ledger.txt"), []byte(long), 0o644)
		os.WriteFile(filepath.Join(inbox, "pic.png"), shot.Bytes(), 0o644)
		if res := wait(t, e.run()); res.Status != store.StatusCompleted {
			t.Fatalf("result = %+v", res)
		}
		reqs := l.requests()
		first, _ := lastTool(t, reqs[1])
		if !strings.HasPrefix(first, "inbox/ledger.txt: text, 28.8 KB:\n"+line) || !strings.HasSuffix(first, "\n[More follows: call read_file with offset 11977 to read on.]") {
			t.Errorf("the first part:\n%.200s\n...%s", first, first[max(len(first)-200, 0):])
		}
		second, _ := lastTool(t, reqs[2])
		if !strings.HasPrefix(second, "inbox/ledger.txt: text, 28.8 KB. From byte 11977:\n") || !strings.Contains(second, "[More follows: call read_file with offset 23954") {
			t.Errorf("the second part:\n%.200s\n...%s", second, second[max(len(second)-200, 0):])
		}
		picture, images := lastTool(t, reqs[3])
		if textOnly {
			if !strings.HasPrefix(picture, "inbox/pic.png: PNG, ") || !strings.HasSuffix(picture, " bytes, an image of 40x30 pixels. This model takes no images, so it is not shown.") || len(images) != 0 {
				t.Errorf("a model without vision: %q, %d images", picture, len(images))
			}
			continue
		}
		if !strings.HasPrefix(picture, "inbox/pic.png: PNG, ") || !strings.HasSuffix(picture, "an image of 40x30 pixels:") {
			t.Errorf("the image's result: %q", picture)
		}
		// The file, then the screen.
		if len(images) != 2 || images[0].Bounds().Dx() != 40 || images[0].Bounds().Dy() != 30 {
			t.Fatalf("%d images after the results, the first %v", len(images), images)
		}
		if r, g, _, _ := images[0].At(0, 0).RGBA(); r>>8 != 255 || g != 0 {
			t.Errorf("the image shown is not the file's: %v", images[0].At(0, 0))
		}
	}
}
