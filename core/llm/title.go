package llm

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TitlePrompt is the system prompt of a title request. Tests' scripted
// providers recognise a title request by it.
const TitlePrompt = "You name tasks. Answer with a title for the task the user describes: at most eight words, one line, no quotes, no final full stop."

// Bounds of a title request and of a title.
const (
	TitleMaxTokens     = 24
	MaxTitleRunes      = 80
	titleRequestBytes  = 2000 // of the description sent
	titleAnswerScanCap = 4096 // of the answer read
)

// Title asks the model for a short title for a task's description and
// returns it cleaned (CleanTitle). The answer is bounded (TitleMaxTokens);
// an answer with no usable line is an error.
func (c *Client) Title(ctx context.Context, description string) (string, Usage, error) {
	r, err := c.Complete(ctx, Request{System: TitlePrompt, MaxTokens: TitleMaxTokens, NoReasoning: true,
		Messages: []Message{UserText(truncate(strings.TrimSpace(description), titleRequestBytes))}})
	if err != nil {
		return "", Usage{}, err
	}
	title := CleanTitle(r.Text)
	if title == "" {
		return "", r.Usage, &Error{Attempts: 1, Message: "the model answered the title request without a title"}
	}
	return title, r.Usage, nil
}

// CleanTitle makes a model's answer a title: its first line with text,
// without a "Title:" label, the quotes, backticks or asterisks around it,
// control and format characters, runs of spaces or a final full stop, cut
// to MaxTitleRunes. It returns "" when nothing is left.
func CleanTitle(s string) string {
	if len(s) > titleAnswerScanCap {
		s = s[:titleAnswerScanCap]
	}
	s = strings.ToValidUTF8(s, "")
	var line string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == '\u2028', r == '\u2029':
			return -1
		}
		return r
	}, line)
	line = strings.Join(strings.Fields(line), " ")
	for _, label := range []string{"title:", "**title:**", "task title:"} {
		if len(line) >= len(label) && strings.EqualFold(line[:len(label)], label) {
			line = strings.TrimSpace(line[len(label):])
		}
	}
	line = strings.Trim(line, "\"'`*_“”‘’«» ")
	line = strings.TrimSpace(strings.TrimSuffix(line, "."))
	if utf8.RuneCountInString(line) > MaxTitleRunes {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:MaxTitleRunes-1])) + "…"
	}
	return line
}
