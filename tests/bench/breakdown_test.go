package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/llm"
)

// pngData is a blank PNG of w x h pixels in base64.
func pngData(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// TestPromptParts: each protocol's request is split into its tools, system
// prompt, history text, images (by the vendor's rule, from the image's own
// size) and tool results, as the servers count them.
func TestPromptParts(t *testing.T) {
	img := pngData(t, 1280, 800)
	tool := `{"name":"open_app","description":"Open an app.","input_schema":{"type":"object"}}`
	claude := `{"tools":[` + tool + `],"system":[{"type":"text","text":"` + strings.Repeat("s", 400) + `"}],"messages":[` +
		`{"role":"user","content":"` + strings.Repeat("t", 80) + `"},` +
		`{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("a", 40) + `"},{"type":"tool_use","id":"c1","name":"computer","input":{"action":"type"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"` + strings.Repeat("r", 20) + `"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img + `"}}]}]}]}`
	p := claudeParts(claude)
	if !near(p.tools, float64(len(tool))/4) || !near(p.system, 100) || !near(p.text, 20+10+float64(len("computer")+len(`{"action":"type"}`))/4) ||
		!near(p.results, 5) || !near(p.images, 1366) || p.imageCount != 1 {
		t.Errorf("claude: %+v", p)
	}

	resp := `{"tools":[{"type":"computer_use_preview"}],"instructions":"` + strings.Repeat("s", 40) + `","input":[` +
		`{"role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("t", 40) + `"}]},` +
		`{"type":"computer_call","call_id":"c","action":{"type":"wait"}},` +
		`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,` + img + `"}},` +
		`{"type":"function_call_output","call_id":"d","output":"` + strings.Repeat("r", 8) + `"}]}`
	p = responsesParts(resp)
	// 1280x800 fits 768 on its short side: 1229x768, 3x2 tiles.
	if !near(p.system, 10) || !near(p.text, 10+float64(len(`{"type":"wait"}`))/4) || !near(p.results, 2) || !near(p.images, 65+6*129) || p.imageCount != 1 {
		t.Errorf("responses: %+v", p)
	}

	chat, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{
		{"role": "system", "content": strings.Repeat("s", 70)},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": strings.Repeat("t", 28)}, {"type": "image_url", "image_url": map[string]string{"url": "data:image/png;base64," + img}}}},
		{"role": "tool", "tool_call_id": "x", "content": strings.Repeat("r", 14)},
	}})
	p = chatParts(chat)
	// 8/7 of the agent's estimate; images by OpenAI's rule (1105 for 1280x800).
	if !near(p.system, 20) || !near(p.text, 8) || !near(p.results, 4) || !near(p.images, 1105*8.0/7) || p.imageCount != 1 {
		t.Errorf("chat: %+v", p)
	}
	if m := meanParts([]promptParts{{text: 10, imageCount: 1}, {text: 30, imageCount: 3}}); m.text != 20 || m.imageCount != 4 {
		t.Errorf("mean: %+v", m)
	}
}

// TestCachedTokens: a chat prompt's cached part is the tokens of the
// segments it starts with in common with the previous prompt, not a share
// of its bytes: what was added after them is not cached.
func TestCachedTokens(t *testing.T) {
	img := "data:image/png;base64," + pngData(t, 1280, 800)
	body := func(texts ...string) []byte {
		var msgs []map[string]any
		for _, s := range texts {
			if s == "IMG" {
				msgs = append(msgs, map[string]any{"role": "user", "content": []map[string]any{{"type": "image_url", "image_url": map[string]string{"url": img}}}})
				continue
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": s})
		}
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		return b
	}
	a := chatSegments(body(strings.Repeat("x", 4000), "IMG"))
	b := chatSegments(body(strings.Repeat("x", 4000), "IMG", strings.Repeat("y", 4000)))
	c := chatSegments(body(strings.Repeat("x", 4000), "[an earlier image]", strings.Repeat("y", 4000)))
	framing := llm.EstimateTokens([]llm.Message{llm.UserMessage()})
	// The tools ("null"), two framings, 1,000 tokens of text and the image.
	want := (1 + 2*framing + 1000 + 1105) * 8 / 7
	if got := cachedTokens(a, b); got != want {
		t.Errorf("cached %d tokens of the longer prompt, want %d", got, want)
	}
	if got, want := cachedTokens(b, c), (1+2*framing+1000)*8/7; got != want {
		t.Errorf("after the image became a note: cached %d, want %d", got, want)
	}
	if cachedTokens(nil, a) != 0 {
		t.Error("a first prompt has nothing cached")
	}
}

// TestOtherRequestsBilled: the task's cost counts its other requests
// (condensing, the completion check), uncached, beside its steps; the
// per-step rows and the breakdown are the steps' alone.
func TestOtherRequestsBilled(t *testing.T) {
	steps := []llm.Usage{{Prompt: 10_000, Completion: 100}, {Prompt: 10_000, Completion: 100}}
	parts := []promptParts{{tools: 1000, images: 9000, imageCount: 3}, {tools: 1000, images: 9000, imageCount: 3}}
	rows := backendRows(backendRun{typ: llm.TypeOpenAICompatible, model: "scripted", usage: steps, parts: parts,
		others: []llm.Usage{{Prompt: 30_000, Completion: 200}}}, "chat cache", 0.6)
	if want := (50_000*3 + 400*15) / 1e6; !near(ms(rows[2].P50), want) || !near(ms(rows[2].Baseline), want) {
		t.Errorf("cost $%.4f (uncached $%.4f), want $%.4f", ms(rows[2].P50), ms(rows[2].Baseline), want)
	}
	if !strings.Contains(rows[0].Note, "20000 in all over 2 agent requests; a step's prompt, mean 10000 tokens: tools 1000 (10%)") ||
		!strings.Contains(rows[0].Note, "images 9000 (90%)") || !strings.Contains(rows[0].Note, "3.0 images a request") || !strings.Contains(rows[1].Note, "200 in all") ||
		!strings.Contains(rows[2].Note, "1 other requests (condensing the history, the completion check: 30000 prompt tokens)") {
		t.Errorf("notes: %q / %q / %q", rows[0].Note, rows[1].Note, rows[2].Note)
	}
}
