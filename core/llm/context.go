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
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// DefaultKeepImages is the most screenshots a request carries as images
// (see Window).
const DefaultKeepImages = 3

// ImagePart returns an image message part holding data as a data URL,
// downscaled (and then JPEG-encoded) when larger than maxW x maxH.
func ImagePart(format string, data []byte, maxW, maxH int) (openai.ChatMessagePart, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return openai.ChatMessagePart{}, fmt.Errorf("screenshot: %w", err)
	}
	if (maxW > 0 && cfg.Width > maxW) || (maxH > 0 && cfg.Height > maxH) {
		img, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			return openai.ChatMessagePart{}, fmt.Errorf("screenshot: %w", err)
		}
		w, h := protocol.FitSize(cfg.Width, cfg.Height, maxW, maxH)
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 85}); err != nil {
			return openai.ChatMessagePart{}, err
		}
		data, format = buf.Bytes(), "jpeg"
	}
	return openai.ChatMessagePart{
		Type:     openai.ChatMessagePartTypeImageURL,
		ImageURL: &openai.ChatMessageImageURL{URL: "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(data), Detail: openai.ImageURLDetailHigh},
	}, nil
}

// Compact returns the conversation with only the last keep images left as
// images; every older image becomes a one-line note, so the prompt stops
// growing with the number of steps. messages is not modified.
func Compact(messages []openai.ChatCompletionMessage, keep int) []openai.ChatCompletionMessage {
	seen := 0
	out := make([]openai.ChatCompletionMessage, len(messages))
	for i := len(messages) - 1; i >= 0; i-- {
		m := messages[i]
		if len(m.MultiContent) > 0 {
			parts := make([]openai.ChatMessagePart, 0, len(m.MultiContent))
			for _, p := range m.MultiContent {
				if p.Type == openai.ChatMessagePartTypeImageURL {
					if seen >= keep {
						p = openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: "[an earlier screenshot, omitted to keep the conversation short]"}
					}
					seen++
				}
				parts = append(parts, p)
			}
			m.MultiContent = parts
		}
		out[i] = m
	}
	return out
}

// Window returns the conversation as the model is sent it: the latest
// screenshots stay images and older ones become notes keep at a time, so
// that between 1 and keep images are sent and the request's prefix stays
// byte-identical for keep-1 steps out of keep. Providers cache prompts by
// prefix (OpenAI automatically; Anthropic-style gateways by marks), and a
// prefix that changed at every step, as dropping one image a step does,
// never hits. This is the chunked removal of Anthropic's computer-use
// reference loop. messages is not modified.
func Window(messages []openai.ChatCompletionMessage, keep int) []openai.ChatCompletionMessage {
	if keep <= 1 {
		return Compact(messages, 1)
	}
	n := 0
	for _, m := range messages {
		for _, p := range m.MultiContent {
			if p.Type == openai.ChatMessagePartTypeImageURL {
				n++
			}
		}
	}
	if n == 0 {
		return Compact(messages, 0)
	}
	return Compact(messages, (n-1)%keep+1)
}

// Token estimates. Text counts 4 bytes a token (English prose and JSON
// run 3.5 to 4.5); an image counts as OpenAI's vision pricing does (fit in
// 2048x2048, then the shortest side to 768, 170 a 512-pixel tile plus 85);
// each message adds its framing.
const (
	bytesPerToken     = 4
	messageOverhead   = 4
	unknownImageToken = 1105 // a 1280x800 screenshot
)

// EstimateTokens estimates the prompt tokens of messages.
func EstimateTokens(messages []openai.ChatCompletionMessage) int {
	total := 0
	for _, m := range messages {
		total += messageOverhead + len(m.Content)/bytesPerToken
		for _, p := range m.MultiContent {
			switch {
			case p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil:
				total += imageTokens(p.ImageURL.URL)
			default:
				total += len(p.Text) / bytesPerToken
			}
		}
		for _, c := range m.ToolCalls {
			total += (len(c.Function.Name) + len(c.Function.Arguments) + len(c.ID)) / bytesPerToken
		}
	}
	return total
}

// imageTokens estimates a data-URL image from its header's size.
func imageTokens(url string) int {
	_, data, ok := strings.Cut(url, ";base64,")
	if !ok {
		return unknownImageToken
	}
	head := data[:min(len(data), 8192)]
	head = head[:len(head)/4*4]
	raw, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return unknownImageToken
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return unknownImageToken
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if s := 2048 / max(w, h); s < 1 {
		w, h = w*s, h*s
	}
	if s := 768 / min(w, h); s < 1 {
		w, h = w*s, h*s
	}
	tiles := int(math.Ceil(w/512)) * int(math.Ceil(h/512))
	return 170*tiles + 85
}

// knownWindows are context windows, in tokens, of model families whose
// providers' /models does not say (OpenAI's), by id prefix.
var knownWindows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576}, {"gpt-5", 400_000}, {"gpt-4o", 128_000}, {"o1", 200_000}, {"o3", 200_000}, {"o4", 200_000},
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
