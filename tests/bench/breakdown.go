package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"image"
	"math"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Where a long task's prompt tokens go: each agent request of a backend's
// run split into the tool definitions, the system prompt, the history's
// text (the task, what the model said and the calls it made, the notes of
// each step), the images, and the text of tool results. Text counts 4
// bytes a token, as every scripted server counts it; images by the
// vendor's rule (the server's). The parts are read from the request body
// each protocol sends.

// promptParts is a request's prompt in parts, in tokens.
type promptParts struct {
	tools, system, text, images, results float64
	// imageCount is how many images the request carried.
	imageCount int
}

func (p promptParts) add(q promptParts) promptParts {
	return promptParts{p.tools + q.tools, p.system + q.system, p.text + q.text, p.images + q.images, p.results + q.results, p.imageCount + q.imageCount}
}

func (p promptParts) scale(f float64) promptParts {
	return promptParts{p.tools * f, p.system * f, p.text * f, p.images * f, p.results * f, p.imageCount}
}

func (p promptParts) total() float64 { return p.tools + p.system + p.text + p.images + p.results }

// meanParts is the mean of requests' parts.
func meanParts(all []promptParts) promptParts {
	var sum promptParts
	for _, p := range all {
		sum = sum.add(p)
	}
	if len(all) == 0 {
		return sum
	}
	return sum.scale(1 / float64(len(all)))
}

// String says a step's prompt by part, and each part's share.
func (p promptParts) String() string {
	t := max(p.total(), 1)
	part := func(name string, v float64) string {
		return fmt.Sprintf("%s %.0f (%.0f%%)", name, v, 100*v/t)
	}
	return strings.Join([]string{part("tools", p.tools), part("system", p.system), part("history text", p.text),
		part("images", p.images), part("tool results", p.results)}, ", ")
}

// textTokens counts text as the scripted servers do: 4 bytes a token.
func textTokens(s string) float64 { return float64(len(s)) / 4 }

// jsonTokens counts a JSON value's compact encoding.
func jsonTokens(v any) float64 {
	b, _ := json.Marshal(v)
	return float64(len(b)) / 4
}

// imageSize reads an image's size from the start of its base64 data (or
// data URL).
func imageSize(data string) (int, int) {
	if _, rest, ok := strings.Cut(data, ";base64,"); ok {
		data = rest
	}
	head := data[:min(len(data), 8192)]
	raw, err := base64.StdEncoding.DecodeString(head[:len(head)/4*4])
	if err != nil {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// tileTokens is OpenAI's tile rule: fit in 2048x2048, the short side to
// 768, then base plus tile for each 512-pixel tile.
func tileTokens(w, h, base, tile int) float64 {
	fw, fh := float64(w), float64(h)
	if m := max(fw, fh); m > 2048 {
		fw, fh = fw*2048/m, fh*2048/m
	}
	if m := min(fw, fh); m > 768 {
		fw, fh = fw*768/m, fh*768/m
	}
	return float64(base + tile*int(math.Ceil(fw/512)*math.Ceil(fh/512)))
}

// chatParts splits a chat request as the chat provider counts it (8/7 of
// the agent's estimate): images by OpenAI's rule.
func chatParts(body []byte) promptParts {
	var req openai.ChatCompletionRequest
	if json.Unmarshal(body, &req) != nil {
		return promptParts{}
	}
	p := promptParts{tools: jsonTokens(req.Tools)}
	for _, m := range req.Messages {
		switch m.Role {
		case openai.ChatMessageRoleSystem:
			p.system += textTokens(m.Content)
			continue
		case openai.ChatMessageRoleTool:
			p.results += textTokens(m.Content)
		default:
			p.text += textTokens(m.Content)
		}
		for _, part := range m.MultiContent {
			if part.ImageURL == nil {
				p.text += textTokens(part.Text)
				continue
			}
			w, h := imageSize(part.ImageURL.URL)
			p.images += float64(blockTokens(llm.ImageBlock(&llm.Image{Width: w, Height: h})))
			p.imageCount++
		}
		for _, c := range m.ToolCalls {
			p.text += textTokens(c.ID + c.Function.Name + c.Function.Arguments)
		}
	}
	return p.scale(8.0 / 7)
}

// claudeParts splits a Messages API request as claudetest counts it:
// images at width×height/750.
func claudeParts(body string) promptParts {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return promptParts{}
	}
	var p promptParts
	for _, t := range req.Tools {
		p.tools += float64(len(t)) / 4
	}
	p.system = claudeContent(req.System, false).text
	for _, m := range req.Messages {
		p = p.add(claudeContent(m.Content, false))
	}
	return p
}

// claudeContent counts content: a string or blocks; inResult says it is a
// tool result's.
func claudeContent(raw json.RawMessage, inResult bool) promptParts {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if inResult {
			return promptParts{results: textTokens(s)}
		}
		return promptParts{text: textTokens(s)}
	}
	var blocks []claudeBlock
	json.Unmarshal(raw, &blocks)
	var p promptParts
	for _, b := range blocks {
		p = p.add(b.parts(inResult))
	}
	return p
}

// claudeBlock is a content block of a Messages API request.
type claudeBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Source   *struct {
		Data string `json:"data"`
	} `json:"source"`
	Content json.RawMessage `json:"content"`
}

// parts counts a block; inResult says it is a tool result's content.
func (b claudeBlock) parts(inResult bool) promptParts {
	var p promptParts
	switch b.Type {
	case "text":
		if inResult {
			p.results = textTokens(b.Text)
		} else {
			p.text = textTokens(b.Text)
		}
	case "image":
		if b.Source != nil {
			w, h := imageSize(b.Source.Data)
			p.images, p.imageCount = float64((w*h+749)/750), 1
		}
	case "tool_use":
		p.text = textTokens(b.Name) + float64(len(b.Input))/4
	case "thinking":
		p.text = textTokens(b.Thinking)
	case "tool_result":
		p = claudeContent(b.Content, true)
	}
	return p
}

// responsesParts splits a Responses API request as responsestest counts
// it for computer-use-preview: screenshots by its tile rule (65 + 129 a
// tile).
func responsesParts(body string) promptParts {
	var req struct {
		Tools        []json.RawMessage `json:"tools"`
		Instructions string            `json:"instructions"`
		Input        []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Action    json.RawMessage `json:"action"`
			Output    json.RawMessage `json:"output"`
			Summary   json.RawMessage `json:"summary"`
		} `json:"input"`
	}
	if json.Unmarshal([]byte(body), &req) != nil {
		return promptParts{}
	}
	p := promptParts{system: textTokens(req.Instructions)}
	for _, t := range req.Tools {
		p.tools += float64(len(t)) / 4
	}
	image := func(url string) {
		w, h := imageSize(url)
		p.images += tileTokens(w, h, 65, 129)
		p.imageCount++
	}
	for _, it := range req.Input {
		switch it.Type {
		case "", "message":
			var s string
			if json.Unmarshal(it.Content, &s) == nil {
				if it.Role == "system" || it.Role == "developer" {
					p.system += textTokens(s)
				} else {
					p.text += textTokens(s)
				}
				continue
			}
			var parts []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL string `json:"image_url"`
			}
			json.Unmarshal(it.Content, &parts)
			for _, c := range parts {
				if c.Type == "input_image" {
					image(c.ImageURL)
				} else {
					p.text += textTokens(c.Text)
				}
			}
		case "function_call":
			p.text += textTokens(it.Name + it.Arguments)
		case "computer_call":
			p.text += float64(len(it.Action)) / 4
		case "reasoning":
			p.text += float64(len(it.Summary)) / 4
		case "function_call_output":
			var s string
			json.Unmarshal(it.Output, &s)
			p.results += textTokens(s)
		case "computer_call_output":
			var shot struct {
				ImageURL string `json:"image_url"`
			}
			json.Unmarshal(it.Output, &shot)
			image(shot.ImageURL)
		}
	}
	return p
}

// segment is a piece of a chat prompt as a prefix cache sees it: the
// tools, a message's framing, or one of its blocks, by hash, with its
// tokens as the agent estimates them.
type segment struct {
	hash   uint64
	tokens int
}

// chatSegments lists a chat request's prompt in the order the model reads
// it: the tools, then each message's framing and blocks.
func chatSegments(body []byte) []segment {
	var req openai.ChatCompletionRequest
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	tools, _ := json.Marshal(req.Tools)
	segs := []segment{{maphash.Bytes(imageSeed, tools), len(tools) / 4}}
	add := func(s string, tokens int) { segs = append(segs, segment{maphash.String(imageSeed, s), tokens}) }
	for _, m := range req.Messages {
		add("message "+m.Role+" "+m.ToolCallID, llm.EstimateTokens([]llm.Message{llm.UserMessage()}))
		if m.Content != "" {
			add(m.Content, blockTokens(llm.Text(m.Content)))
		}
		for _, part := range m.MultiContent {
			if part.ImageURL == nil {
				add(part.Text, blockTokens(llm.Text(part.Text)))
				continue
			}
			w, h := imageSize(part.ImageURL.URL)
			add(part.ImageURL.URL, blockTokens(llm.ImageBlock(&llm.Image{Width: w, Height: h})))
		}
		for _, c := range m.ToolCalls {
			call := &llm.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)}
			add(c.ID+" "+c.Function.Name+" "+c.Function.Arguments, blockTokens(llm.Block{Type: llm.BlockToolCall, Call: call}))
		}
	}
	return segs
}

// blockTokens is a block's tokens as the agent estimates them, without
// its message's framing.
func blockTokens(b llm.Block) int {
	return llm.EstimateTokens([]llm.Message{llm.UserMessage(b)}) - llm.EstimateTokens([]llm.Message{llm.UserMessage()})
}

// cachedTokens is what a prefix cache reads of a prompt after prev: the
// tokens of the segments both start with, 8/7 of the agent's estimate as
// the chat provider counts.
func cachedTokens(prev, next []segment) int {
	n := 0
	for i := 0; i < min(len(prev), len(next)) && prev[i] == next[i]; i++ {
		n += next[i].tokens
	}
	return n * 8 / 7
}
