package webhooks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Body returns the body h is sent for p, in h's format.
func Body(f Format, p Payload) ([]byte, error) {
	p = p.bounded()
	switch f {
	case Slack:
		return json.Marshal(slackBody{Text: slackEscape(headline(p)) + slackDetail(p)})
	case Discord:
		return json.Marshal(discordBody{Content: discordEscape(headline(p)), Embeds: discordEmbeds(p),
			AllowedMentions: discordMentions{Parse: []string{}}})
	case JSON, "":
		return json.Marshal(p)
	}
	return nil, fmt.Errorf("unknown webhook format %q", f)
}

// headline says in one line what happened.
func headline(p Payload) string {
	title := p.Task.Title
	switch p.Event {
	case TaskEnded:
		return fmt.Sprintf("Task “%s” %s", title, statusWords(p.Task.Status))
	case TaskQuestion:
		return fmt.Sprintf("Task “%s” asks a question", title)
	case TaskPermission:
		tool := ""
		if p.Permission != nil {
			tool = p.Permission.Tool
		}
		return fmt.Sprintf("Task “%s” asks to use %s", title, tool)
	case TaskReview:
		return fmt.Sprintf("Task “%s” has changes to your folders to review", title)
	case Test:
		return "Hivecrew test: this webhook works"
	}
	return fmt.Sprintf("Task “%s”: %s", title, p.Event)
}

func statusWords(s string) string {
	if s == "writebackReview" {
		return "ended; its changes to your folders wait for review"
	}
	return wire.EndWords(s)
}

// detail is the text under the headline: the result, the question and its
// options, or the permission's details.
func detail(p Payload) string {
	switch {
	case p.Question != nil:
		d := p.Question.Text
		if len(p.Question.Options) > 0 {
			d += "\nOptions: " + strings.Join(p.Question.Options, " / ")
		}
		return d
	case p.Permission != nil:
		return p.Permission.Details
	}
	return p.Task.Result
}

type slackBody struct {
	Text string `json:"text"`
}

func slackDetail(p Payload) string {
	d := detail(p)
	if d == "" {
		return ""
	}
	return "\n>" + strings.ReplaceAll(slackEscape(d), "\n", "\n>")
}

// slackEscape escapes Slack's control characters: text of the model's can
// then not mention a channel or make a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

type discordBody struct {
	Content string         `json:"content"`
	Embeds  []discordEmbed `json:"embeds,omitempty"`
	// AllowedMentions with an empty parse list keeps @everyone in a
	// model's text from pinging anyone.
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

type discordMentions struct {
	Parse []string `json:"parse"`
}

type discordEmbed struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Color       int    `json:"color"`
}

func discordEmbeds(p Payload) []discordEmbed {
	d := detail(p)
	if d == "" {
		return nil
	}
	color := 0x3B82F6 // blue: needs you
	switch {
	case p.Event == TaskEnded && p.Task.Status == "completed":
		color = 0x22C55E
	case p.Event == TaskEnded:
		color = 0xEF4444
	}
	return []discordEmbed{{Title: p.Task.Title, Description: clip(discordEscape(d), maxDiscordDescription), Color: color}}
}

// maxDiscordDescription is the longest embed description Discord takes.
const maxDiscordDescription = 4096

// discordSpecial are the characters of Discord's Markdown: a masked link
// ([words](address)) would show a model's or a guest's words for an
// address it hides; formatting, quotes, spoilers, headings and code
// blocks would make text read otherwise.
var discordSpecial = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "*", `\*`, "_", `\_`,
	"~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "<", `\<`, "#", `\#`, "-", `\-`)

// discordEscape escapes Discord's Markdown: the text shows as written,
// no masked link clickable; a bare address stays a link that shows
// itself.
func discordEscape(s string) string { return discordSpecial.Replace(s) }
