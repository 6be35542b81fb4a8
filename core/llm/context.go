package llm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png" // decode guest screenshots
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// DefaultKeepImages is the most screenshots a request carries as images
// (see Window).
const DefaultKeepImages = 3

// NewImage returns a picture of encoded image data (PNG or JPEG, as
// format says) for the model: downscaled (and then JPEG-encoded) when it
// is larger than maxW x maxH (0: no bound).
func NewImage(format string, data []byte, maxW, maxH int) (*Image, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if (maxW > 0 && cfg.Width > maxW) || (maxH > 0 && cfg.Height > maxH) {
		w, h := protocol.FitSize(cfg.Width, cfg.Height, maxW, maxH)
		return ResizedImage(data, image.Rect(0, 0, cfg.Width, cfg.Height), w, h)
	}
	return &Image{MediaType: "image/" + format, Width: cfg.Width, Height: cfg.Height, Data: base64.StdEncoding.EncodeToString(data)}, nil
}

// ResizedImage returns the part src of encoded image data scaled to
// exactly w x h pixels, as a JPEG; the image is sent at a size a native
// computer tool was told of, and the points the model names are in it.
func ResizedImage(data []byte, src image.Rectangle, w, h int) (*Image, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	src = src.Intersect(img.Bounds())
	if src.Empty() || w <= 0 || h <= 0 {
		return nil, fmt.Errorf("screenshot: nothing of %v to show at %dx%d", src, w, h)
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, src, draw.Src, nil)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
		return nil, err
	}
	return &Image{MediaType: "image/jpeg", Width: w, Height: h, Data: base64.StdEncoding.EncodeToString(buf.Bytes())}, nil
}

// omittedNote stands in for an image a request leaves out: a screenshot,
// or an image file read_file showed.
const omittedNote = "[earlier image omitted]"

// Compact returns the conversation with only the last keep images left as
// images (in tool results too); every older image becomes a one-line
// note, so the prompt stops growing with the number of steps. messages is
// not modified.
func Compact(messages []Message, keep int) []Message {
	seen := 0
	note := func(b Block) Block {
		if b.Type != BlockImage {
			return b
		}
		if seen++; seen > keep {
			return Block{Type: BlockText, Text: omittedNote, wasImage: true}
		}
		return b
	}
	out := make([]Message, len(messages))
	for i := len(messages) - 1; i >= 0; i-- {
		m := messages[i]
		if m.HasImage() {
			blocks := make([]Block, len(m.Content))
			for j := len(m.Content) - 1; j >= 0; j-- {
				b := m.Content[j]
				if b.Type == BlockToolResult && b.Result != nil {
					r := *b.Result
					r.Content = slices.Clone(r.Content)
					for k := len(r.Content) - 1; k >= 0; k-- {
						r.Content[k] = note(r.Content[k])
					}
					b.Result = &r
				}
				blocks[j] = note(b)
			}
			m.Content = blocks
		}
		out[i] = m
	}
	return out
}

// countImages counts the images of a conversation, in tool results too.
func countImages(messages []Message) int {
	n := 0
	for _, m := range messages {
		for _, b := range m.Content {
			switch {
			case b.Type == BlockImage:
				n++
			case b.Type == BlockToolResult && b.Result != nil:
				for _, c := range b.Result.Content {
					if c.Type == BlockImage {
						n++
					}
				}
			}
		}
	}
	return n
}

// Window returns the conversation as the model is sent it: the latest
// screenshots stay images and older ones become notes keep at a time, so
// that between 1 and keep images are sent and the request's prefix stays
// byte-identical for keep-1 steps out of keep. Providers cache prompts by
// prefix (OpenAI automatically; Anthropic by breakpoints), and a prefix
// that changed at every step, as dropping one image a step does, never
// hits. This is the chunked removal of Anthropic's computer-use reference
// loop. The images of the last message (the screen, and the image files
// the last tool calls read) are always sent, keep at most: a model is
// shown what it asked to see. messages is not modified.
//
// Long tool results (a file read, a command's output) older than the
// window's screens and the 2×keep steps before them are cut to
// oldResultBytes, with a note: they are read again at every step until
// the history is condensed, and the model acted on them long ago. Their
// boundary moves with the image window's, keep steps at a time, so it
// breaks the prefix only where dropping images already does.
func Window(messages []Message, keep int) []Message {
	keep = max(keep, 1)
	n := countImages(messages)
	kept := 0
	switch {
	case keep == 1:
		kept = 1
	case n > 0:
		last := 0
		if len(messages) > 0 {
			last = countImages(messages[len(messages)-1:])
		}
		kept = max((n-1)%keep+1, min(last, keep))
	}
	return trimOldResults(Compact(messages, kept), resultsFrom(messages, kept, keep))
}

// WindowDropsNext says the next step's request, one screenshot on, will
// send none of the images Window(messages, keep) sends: its chunk is
// full, so nothing after the first of them is a prefix of the next
// request, and a prompt cache need not keep it.
func WindowDropsNext(messages []Message, keep int) bool {
	n := countImages(messages)
	return n > 0 && n%max(keep, 1) == 0
}

// WindowStartsChunk says Window(messages, keep) starts a chunk: it sends
// the newest image alone, the ones before it became notes with this
// request (or there are none), so nothing of the last request's from its
// oldest image on is read again.
func WindowStartsChunk(messages []Message, keep int) bool {
	return (countImages(messages)-1)%max(keep, 1) <= 0
}

// oldResultBytes is the most of a tool result's text sent once it is
// older than Window's recent steps.
const oldResultBytes = 1500

// oldResultNote ends a tool result Window cut.
const oldResultNote = "\n[… %d more bytes of this earlier result left out to keep the conversation short; call the tool again to see them]"

// resultsFrom is the index of the first message whose tool results Window
// sends whole: 2×keep user messages before the oldest one holding a
// screenshot it sends (kept of them), or, with no image sent, before the
// oldest of the last ((u-1) mod keep)+1 of the u user messages.
func resultsFrom(messages []Message, kept, keep int) int {
	var users, withImage []int
	for i, m := range messages {
		if m.Role != RoleUser {
			continue
		}
		users = append(users, i)
		for range countImages(messages[i : i+1]) {
			withImage = append(withImage, i)
		}
	}
	if len(users) == 0 {
		return 0
	}
	start := users[len(users)-1-(len(users)-1)%keep]
	if kept > 0 && len(withImage) >= kept {
		start = withImage[len(withImage)-kept]
	}
	k := max(0, slices.Index(users, start)-2*keep)
	return users[k]
}

// trimOldResults returns messages with the text of the tool results
// before index from cut to oldResultBytes; messages is not modified.
func trimOldResults(messages []Message, from int) []Message {
	long := func(c Block) bool { return c.Type == BlockText && len(c.Text) > oldResultBytes+len(oldResultNote)+8 }
	var out []Message
	for i, m := range messages[:from] {
		for j, b := range m.Content {
			if b.Type != BlockToolResult || b.Result == nil || !slices.ContainsFunc(b.Result.Content, long) {
				continue
			}
			if out == nil {
				out = slices.Clone(messages)
			}
			if len(out[i].Content) > 0 && &out[i].Content[0] == &m.Content[0] {
				out[i].Content = slices.Clone(m.Content)
			}
			r := *b.Result
			r.Content = slices.Clone(r.Content)
			for k, c := range r.Content {
				if !long(c) {
					continue
				}
				cut := oldResultBytes
				for cut > 0 && !utf8.RuneStart(c.Text[cut]) {
					cut--
				}
				r.Content[k] = Text(c.Text[:cut] + fmt.Sprintf(oldResultNote, len(c.Text)-cut))
			}
			out[i].Content[j].Result = &r
		}
	}
	if out == nil {
		return messages
	}
	return out
}

// Token estimates. Text counts 4 bytes a token (English prose and JSON
// run 3.5 to 4.5); an image counts as OpenAI's vision pricing does (fit in
// 2048x2048, then the shortest side to 768, 170 a 512-pixel tile plus 85)
// or, for Anthropic, as its width times height over 750 once fitted in
// its limits; each message adds its framing.
const (
	bytesPerToken   = 4
	messageOverhead = 4
)

// EstimateTokens estimates the prompt tokens of messages, images by
// OpenAI's rule.
func EstimateTokens(messages []Message) int { return estimate(messages, imageTokens) }

// EstimateTokens estimates the prompt tokens of messages for the client's
// provider: images by Anthropic's rule for Claude.
func (c *Client) EstimateTokens(messages []Message) int {
	if c.cfg.Type == TypeAnthropic {
		return estimate(messages, claudeImageTokens)
	}
	return estimate(messages, imageTokens)
}

func estimate(messages []Message, imageTokens func(w, h int) int) int {
	total := 0
	var blockTokens func(b Block) int
	blockTokens = func(b Block) int {
		switch b.Type {
		case BlockImage:
			return imageTokens(b.Image.Width, b.Image.Height)
		case BlockToolCall:
			return (len(b.Call.Name) + len(b.Call.Args) + len(b.Call.ID)) / bytesPerToken
		case BlockToolResult:
			n := 0
			for _, c := range b.Result.Content {
				n += blockTokens(c)
			}
			return n
		case BlockReasoning:
			return (len(b.Reasoning.Text) + len(b.Reasoning.Signature) + len(b.Reasoning.Redacted) + len(b.Reasoning.Encrypted)) / bytesPerToken
		}
		return len(b.Text) / bytesPerToken
	}
	for _, m := range messages {
		total += messageOverhead
		for _, b := range m.Content {
			total += blockTokens(b)
		}
	}
	return total
}

// imageTokens estimates an image of w x h pixels.
func imageTokens(width, height int) int {
	if width <= 0 || height <= 0 {
		return 1105 // a 1280x800 screenshot
	}
	w, h := float64(width), float64(height)
	if s := 2048 / max(w, h); s < 1 {
		w, h = w*s, h*s
	}
	if s := 768 / min(w, h); s < 1 {
		w, h = w*s, h*s
	}
	tiles := int(math.Ceil(w/512)) * int(math.Ceil(h/512))
	return 170*tiles + 85
}

// claudeImageTokens estimates an image of w x h pixels sent to Claude.
func claudeImageTokens(width, height int) int {
	scale := min(1, float64(maxDisplayEdge)/float64(max(width, height, 1)), math.Sqrt(maxDisplayPixels/float64(max(width*height, 1))))
	return int(float64(width)*scale) * int(float64(height)*scale) / 750
}

// knownWindows are context windows, in tokens, of model families whose
// providers' /models does not say (OpenAI's), by id prefix.
var knownWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576}, {"gpt-5", 400_000}, {"gpt-4o", 128_000}, {"o1", 200_000}, {"o3", 200_000}, {"o4", 200_000},
	// OpenAI's model page: an 8,192-token window (and 1,024 output tokens).
	{"computer-use-preview", 8_192},
	{"claude", 200_000}, {"gemini", 1_048_576},
}

// DefaultContextTokens is the window assumed when neither the provider nor
// the known windows say.
const DefaultContextTokens = 128_000

// ContextWindow returns a model's context window: listed, the provider's
// figure (0 when it gave none), else a known family's, else
// DefaultContextTokens.
func ContextWindow(model string, listed int) int {
	if listed > 0 {
		return listed
	}
	id := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	for _, k := range knownWindows {
		if strings.HasPrefix(id, k.prefix) {
			return k.tokens
		}
	}
	return DefaultContextTokens
}

// IsContextOverflow says err is a provider's refusal of a prompt longer
// than the model's context window.
func IsContextOverflow(err error) bool {
	var e *Error
	// A rate limit ("too many tokens per minute", 429) is not one.
	if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 || e.Status == 429 {
		return false
	}
	if e.Code == "context_length_exceeded" {
		return true
	}
	msg := strings.ToLower(e.Message)
	for _, s := range []string{"context length", "context_length", "context window", "maximum context", "prompt is too long", "too many tokens", "reduce the length"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ForgetOldImages drops the data of every image but the newest keep (in
// tool results too): Window and Compact with keep or fewer never send an
// older one again, and a long task need not hold every screenshot it took
// in memory. The blocks stay images (so Window's chunks stay where they
// were); their data goes.
func ForgetOldImages(messages []Message, keep int) {
	seen := 0
	forget := func(b Block) {
		if b.Type == BlockImage && b.Image != nil {
			if seen++; seen > keep {
				b.Image.Data, b.Image.url = "", ""
			}
		}
	}
	for i := len(messages) - 1; i >= 0; i-- {
		for j := len(messages[i].Content) - 1; j >= 0; j-- {
			b := messages[i].Content[j]
			if b.Type == BlockToolResult && b.Result != nil {
				for k := len(b.Result.Content) - 1; k >= 0; k-- {
					forget(b.Result.Content[k])
				}
			}
			forget(b)
		}
	}
}
