package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestCacheMarks: with CacheMarks, a chat request carries exactly two
// cache breakpoints, on the system prompt and on the newest message's last
// part; the next request moves the second one to its newest message (a
// reused message does not keep an old mark); images are sent whole.
func TestCacheMarks(t *testing.T) {
	s := newServer(t, reply("ok"))
	c := client(t, s, func(c *Config) { c.CacheMarks = true })
	img := "data:image/png;base64," + strings.Repeat("A", 4000)
	conv := Request{System: "You operate a computer.", Messages: []Message{
		UserText("Task: click OK"),
		UserMessage(Text("Step 1."), ImageBlock(&Image{MediaType: "image/png", Data: strings.Repeat("A", 4000)})),
	}}
	if _, err := c.Complete(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	conv.Messages = append(conv.Messages, AssistantText("Clicking."), UserText("Step 2."))
	if _, err := c.Complete(context.Background(), conv); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]int{{0, 2}, {0, 4}} {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(s.bodies[i], &req); err != nil {
			t.Fatal(err)
		}
		var marked []int
		for j, m := range req.Messages {
			if strings.Contains(string(m.Content), `"cache_control":{"type":"ephemeral"}`) {
				marked = append(marked, j)
			}
		}
		if len(marked) != 2 || marked[0] != want[0] || marked[1] != want[1] {
			t.Errorf("request %d: marks on messages %v, want %v", i, marked, want)
		}
		if !strings.Contains(string(s.bodies[i]), img) {
			t.Errorf("request %d lost its image", i)
		}
	}
	if !strings.Contains(string(s.bodies[1]), `{"cache_control":{"type":"ephemeral"},"text":"Step 2.","type":"text"}`) {
		t.Errorf("a text message is not marked as one text part: %s", s.bodies[1][len(s.bodies[1])-200:])
	}

	// Without CacheMarks, nothing is marked.
	s = newServer(t, reply("ok"))
	if _, err := client(t, s, nil).Complete(context.Background(), conv); err != nil || strings.Contains(string(s.bodies[0]), "cache_control") {
		t.Errorf("unmarked client sent a mark (%v)", err)
	}
	for _, tc := range []struct {
		url, model string
		want       bool
	}{
		{"https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5", true},
		{"https://api.anthropic.com/v1", "claude-sonnet-4-5", false},
		{"https://api.openai.com/v1", "gpt-5", false},
	} {
		if got := AcceptsCacheMarks(tc.url, tc.model); got != tc.want {
			t.Errorf("AcceptsCacheMarks(%s, %s) = %v", tc.url, tc.model, got)
		}
	}
}
