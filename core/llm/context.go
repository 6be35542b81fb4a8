package llm

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png" // decode guest screenshots

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// DefaultKeepImages is how many of the latest screenshots stay images in
// the prompt.
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
