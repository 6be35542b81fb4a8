package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanTitle(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for in, want := range map[string]string{
		`"Quarterly sales summary."`:                  "Quarterly sales summary",
		"\n\n  Title: **Book a flight**\nExplanation": "Book a flight",
		"`Fix the printer`":                           "Fix the printer",
		"Rename\u200b files\x07 in\tbulk":             "Rename files in bulk",
		"“Plan a trip”":                               "Plan a trip",
		"task title: Weekly report":                   "Weekly report",
		"":                                            "",
		"  \n \"\" \n":                                "",
		"bad \xff utf8":                               "bad utf8",
		"A\u202eB":                                    "AB", // a bidi override is a format character
	} {
		if got := CleanTitle(in); got != want {
			t.Errorf("CleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
	got := CleanTitle(long)
	if n := utf8.RuneCountInString(got); n != MaxTitleRunes || !strings.HasSuffix(got, "…") {
		t.Errorf("a long title is %d runes: %q", n, got)
	}
	if got := CleanTitle(strings.Repeat("x", 1<<20)); utf8.RuneCountInString(got) != MaxTitleRunes {
		t.Errorf("a huge answer gives %d runes", utf8.RuneCountInString(got))
	}
}

func TestTitleRequest(t *testing.T) {
	s := newServer(t, reply("Title: \"Plan the offsite\"\nbecause…"))
	c := client(t, s, func(c *Config) { c.ReasoningEffort = "high" })
	title, u, err := c.Title(context.Background(), "  Plan the team offsite for March "+strings.Repeat("x", 10000))
	if err != nil || title != "Plan the offsite" || u.Total != 120 {
		t.Fatalf("title %q %+v %v", title, u, err)
	}
	var req struct {
		MaxTokens int    `json:"max_tokens"`
		Effort    string `json:"reasoning_effort"`
		Messages  []struct {
			Role, Content string
		} `json:"messages"`
	}
	json.Unmarshal(s.bodies[0], &req)
	if req.MaxTokens != TitleMaxTokens || req.Effort != "" || len(req.Messages) != 2 || req.Messages[0].Content != TitlePrompt ||
		len(req.Messages[1].Content) > titleRequestBytes+len("…") || !strings.HasPrefix(req.Messages[1].Content, "Plan the team offsite") {
		t.Errorf("request %.300s", s.bodies[0])
	}

	// No usable line is an error, with the tokens it cost.
	s = newServer(t, reply(" \n\"\"\n"))
	if _, u, err := client(t, s, nil).Title(context.Background(), "x"); err == nil || u.Total != 120 {
		t.Errorf("an empty title: %+v %v", u, err)
	}

	// The Responses API gets the bound as max_output_tokens.
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Offsite plan"}]}],"usage":{"input_tokens":10,"output_tokens":3,"total_tokens":13}}`)
	})
	title, _, err = client(t, s, func(c *Config) { c.Backend = BackendResponses }).Title(context.Background(), "Plan it")
	if err != nil || title != "Offsite plan" || !strings.Contains(string(s.bodies[0]), `"max_output_tokens":24`) {
		t.Errorf("responses: %q %v %s", title, err, s.bodies[0])
	}
}
