package responsestest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	_ "image/gif" // image formats OpenAI takes
	_ "image/jpeg"
	_ "image/png"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	_ "golang.org/x/image/webp"
)

// Token estimates: text is a token every 4 bytes, an image costs what
// OpenAI's tile rule charges, and automatic prompt caching reuses the
// longest prefix of an earlier prompt of the same model.

// Image is an image a request carried, as decoded.
type Image struct {
	// Path is where it was in the request: "input[3].output".
	Path string
	// Source is "computer_call_output" (a screenshot) or "input_image".
	Source string
	// MIME is the type its data URL declared; Format is what it decoded
	// as ("png", "jpeg", "gif", "webp").
	MIME, Format  string
	Width, Height int
	// Bytes is the size of the image file.
	Bytes  int
	Detail string
}

// imageCache decodes each distinct image once: a conversation sends its
// screenshots again with every request.
type imageCache struct {
	// mu guards byHash.
	mu     sync.Mutex
	byHash map[[32]byte]Image
}

var imageMIMEs = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// decode checks the data URL of an image (param names it in a refusal).
func (c *imageCache) decode(param, url string) (Image, *apiError) {
	sum := sha256.Sum256([]byte(url))
	c.mu.Lock()
	im, ok := c.byHash[sum]
	c.mu.Unlock()
	if ok {
		return im, nil
	}
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return im, unsimulated(param, "downloading images: send a data URL")
	}
	expected := "Invalid '" + param + "'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got "
	meta, data, ok := strings.Cut(strings.TrimPrefix(url, "data:"), ",")
	if !strings.HasPrefix(url, "data:") || !ok {
		return im, invalid(param, "invalid_value", "Invalid '%s'. Expected a valid URL, but got a value with an invalid format.", param)
	}
	mime, enc, _ := strings.Cut(meta, ";")
	switch {
	case !slices.Contains(imageMIMEs, mime):
		return im, invalid(param, "invalid_value", "%sunsupported MIME type '%s'.", expected, mime)
	case enc != "base64":
		return im, invalid(param, "invalid_value", "%sa value that is not base64-encoded.", expected)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return im, invalid(param, "invalid_value", "%san invalid base64 encoding.", expected)
	}
	img, format, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return im, invalid(param, "invalid_image_format", "The image data you provided does not represent a valid image. Please check your input and try again with one of the supported image formats: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'].")
	}
	im = Image{MIME: mime, Format: format, Width: img.Bounds().Dx(), Height: img.Bounds().Dy(), Bytes: len(b)}
	c.mu.Lock()
	c.byHash[sum] = im
	c.mu.Unlock()
	return im, nil
}

// lookup returns an image decode has seen.
func (c *imageCache) lookup(url string) Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byHash[sha256.Sum256([]byte(url))]
}

// imageTokens is OpenAI's tile rule: low detail costs the base; otherwise
// the image is fitted in 2048x2048, its short side brought down to 768,
// and each 512-pixel tile that covers it costs the tile price.
func imageTokens(model string, w, h int, detail string) int {
	base, tile := 85, 170
	switch {
	case strings.HasPrefix(model, "computer-use-preview"):
		base, tile = 65, 129
	case strings.HasPrefix(model, "gpt-5"):
		base, tile = 70, 140
	}
	if detail == "low" || w <= 0 || h <= 0 {
		return base
	}
	fw, fh := float64(w), float64(h)
	if m := max(fw, fh); m > 2048 {
		fw, fh = fw*2048/m, fh*2048/m
	}
	if m := min(fw, fh); m > 768 {
		fw, fh = fw*768/m, fh*768/m
	}
	return base + tile*int(math.Ceil(fw/512)*math.Ceil(fh/512))
}

// segment is a piece of a prompt: text, or an image (its hash and tokens).
type segment struct {
	text   string
	image  string
	tokens int
}

// segments is an item's share of the prompt: its JSON with each image
// cut out as a segment of its own.
func (p *parser) segments(el json.RawMessage) []segment {
	var v any
	json.Unmarshal(el, &v)
	f := flattener{p: p}
	f.value(v)
	f.flush()
	return f.out
}

type flattener struct {
	p   *parser
	buf strings.Builder
	out []segment
}

func (f *flattener) flush() {
	if f.buf.Len() > 0 {
		f.out = append(f.out, segment{text: f.buf.String()})
		f.buf.Reset()
	}
}

func (f *flattener) value(v any) {
	switch x := v.(type) {
	case map[string]any:
		f.buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				f.buf.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			f.buf.Write(b)
			f.buf.WriteByte(':')
			if url, ok := x[k].(string); ok && k == "image_url" && strings.HasPrefix(url, "data:") {
				detail, _ := x["detail"].(string)
				im := f.p.s.images.lookup(url)
				sum := sha256.Sum256([]byte(url))
				f.flush()
				f.out = append(f.out, segment{image: hex.EncodeToString(sum[:]), tokens: imageTokens(f.p.model, im.Width, im.Height, detail)})
				continue
			}
			f.value(x[k])
		}
		f.buf.WriteByte('}')
	case []any:
		f.buf.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				f.buf.WriteByte(',')
			}
			f.value(el)
		}
		f.buf.WriteByte(']')
	default:
		b, _ := json.Marshal(x)
		f.buf.Write(b)
	}
}

// prompt is a whole request's prompt: tools, instructions and the
// conversation, with adjacent text merged.
func prompt(req *request, ctx []*item) []segment {
	var head bytes.Buffer
	json.Compact(&head, req.toolsRaw)
	head.WriteString(req.Instructions)
	out := []segment{{text: head.String()}}
	for _, it := range ctx {
		for _, sg := range it.segs {
			if last := &out[len(out)-1]; sg.image == "" && last.image == "" {
				last.text += sg.text
				continue
			}
			out = append(out, sg)
		}
	}
	return out
}

// promptTokens estimates the tokens of segments.
func promptTokens(segs []segment) int {
	n, images := 0, 0
	for _, sg := range segs {
		n += len(sg.text)
		images += sg.tokens
	}
	return (n+3)/4 + images
}

// commonTokens is the tokens of the longest common prefix of a and b.
func commonTokens(a, b []segment) int {
	n, images := 0, 0
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x.image != "" || y.image != "" {
			if x.image != y.image {
				break
			}
			images += x.tokens
			continue
		}
		k := 0
		for k < len(x.text) && k < len(y.text) && x.text[k] == y.text[k] {
			k++
		}
		n += k
		if k < len(x.text) || k < len(y.text) {
			break
		}
	}
	return n/4 + images
}

// Prompt caching as OpenAI documents it: prompts of 1024 tokens or more
// are cached; a hit covers the longest matching prefix, in steps of 128
// tokens from 1024 on.
const (
	cacheMinTokens  = 1024
	cacheStepTokens = 128
	cacheKept       = 64 // prompts remembered per model
)

// cached is the cached part of a prompt's tokens given earlier prompts.
func cached(segs []segment, earlier [][]segment) int {
	best := 0
	for _, e := range earlier {
		best = max(best, commonTokens(segs, e))
	}
	if best < cacheMinTokens {
		return 0
	}
	return best - best%cacheStepTokens
}

// outputTokens estimates an answer's output and reasoning tokens.
func outputTokens(items []outputItem) (total, reasoning int) {
	for _, it := range items {
		var n int
		switch it.kind {
		case "reasoning":
			for _, s := range it.summary {
				n += len(s)
			}
			n = (n+3)/4 + 64 // the reasoning its summary sums up
			reasoning += n
		case "function_call":
			n = (len(it.name) + len(it.args) + 3) / 4
		case "computer_call":
			b, _ := json.Marshal(it.action)
			n = (len(b) + 3) / 4
		default:
			n = (len(it.text) + 3) / 4
		}
		total += max(n, 1)
	}
	return total, reasoning
}
