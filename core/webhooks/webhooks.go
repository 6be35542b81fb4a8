// Package webhooks tells other programs what the helper's tasks do: a task
// ended, asks a question, asks for a permission or has changes waiting for
// review. Each webhook is an http(s) address that gets a JSON POST in one of
// three shapes (a generic one, Slack's and Discord's), signed with the
// webhook's secret when it has one, and retried with backoff when the
// receiver fails or does not answer.
//
// A Sender owns one queue and the goroutines that deliver it; Notify never
// blocks (a full queue drops the notice, with a log line), so a slow or dead
// receiver never holds a task up.
package webhooks

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Event names what happened.
type Event string

// Events a webhook may ask for.
const (
	// TaskEnded: a task reached a terminal status (completed, failed,
	// cancelled, timedOut, maxIterations, planFailed, writebackReview).
	TaskEnded Event = "task.ended"
	// TaskQuestion: an agent asks the user a question.
	TaskQuestion Event = "task.question"
	// TaskPermission: an agent asks for permission to use a tool.
	TaskPermission Event = "task.permission"
	// TaskReview: a task's changes to host folders wait for review.
	TaskReview Event = "task.review"
	// Test is what `webhooks test` sends; every webhook gets it.
	Test Event = "webhook.test"
)

// Events lists the events a webhook may filter on.
var Events = []Event{TaskEnded, TaskQuestion, TaskPermission, TaskReview}

// Format is the shape of the body a webhook is sent.
type Format string

// Formats.
const (
	// JSON is the generic shape: a Payload.
	JSON Format = "json"
	// Slack is an incoming webhook's {text}.
	Slack Format = "slack"
	// Discord is a webhook's {content, embeds}.
	Discord Format = "discord"
)

// Formats lists the known formats.
var Formats = []Format{JSON, Slack, Discord}

// Hook is one webhook as the Sender uses it.
type Hook struct {
	ID, Name, URL string
	Format        Format
	// Events are the events it gets; none means all of them.
	Events []Event
	// Secret signs each body (X-Hivecrew-Signature); empty: unsigned.
	Secret string
	// Disabled keeps it from notices (a test is still sent).
	Disabled bool
}

// Wants reports whether h is sent e.
func (h Hook) Wants(e Event) bool {
	return e == Test || len(h.Events) == 0 || slices.Contains(h.Events, e)
}

// Payload is what happened, and the body of the json format.
type Payload struct {
	Event      Event       `json:"event"`
	Task       Task        `json:"task"`
	Question   *Question   `json:"question,omitempty"`
	Permission *Permission `json:"permission,omitempty"`
	Time       time.Time   `json:"time"`
}

// Task is the task a Payload is about.
type Task struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// Result is the task's result summary, once it has ended.
	Result        string `json:"result,omitempty"`
	WasSuccessful *bool  `json:"wasSuccessful,omitempty"`
}

// Question is an agent's question to the user.
type Question struct {
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Options []string `json:"options,omitempty"`
}

// Permission is an agent's request to use a tool.
type Permission struct {
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Details string `json:"details,omitempty"`
}

// Text limits: Discord refuses a content over 2000 characters, and nobody
// reads more in a notification.
const (
	maxTitle   = 200
	maxText    = 1500
	maxOptions = 20
)

// bounded returns p with every text cut to the limits (p is not modified).
func (p Payload) bounded() Payload {
	p.Task.Title = clip(p.Task.Title, maxTitle)
	p.Task.Result = clip(p.Task.Result, maxText)
	if q := p.Question; q != nil {
		c := *q
		c.Text = clip(c.Text, maxText)
		c.Options = slices.Clone(c.Options[:min(len(c.Options), maxOptions)])
		for i, o := range c.Options {
			c.Options[i] = clip(o, maxTitle)
		}
		p.Question = &c
	}
	if pr := p.Permission; pr != nil {
		c := *pr
		c.Tool, c.Details = clip(c.Tool, maxTitle), clip(c.Details, maxText)
		p.Permission = &c
	}
	return p
}

// clip cuts s to at most n characters, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// CheckURL says what is wrong with a webhook address: it must be http or
// https, with a host, and no user name or password (they would be logged).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL %q is not an address: %w", raw, errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("webhook URL %q is not http(s): give an address like https://example.com/hook", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("webhook URL %q has no host", raw)
	}
	if u.User != nil {
		return errors.New("a webhook URL may not carry a user name or password: use the signing secret instead")
	}
	if len(raw) > 2048 {
		return fmt.Errorf("webhook URL is too long (%d characters, at most 2048)", len(raw))
	}
	return nil
}

// Redact returns the scheme and host of a webhook address, its path and
// query hidden: a Slack or Discord address is itself the secret.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(an invalid address)"
	}
	out := u.Scheme + "://" + u.Host
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		out += "/…"
	}
	return out
}

// CheckEvents says which names are not events.
func CheckEvents(names []string) ([]Event, error) {
	out := make([]Event, 0, len(names))
	for _, n := range names {
		e := Event(n)
		if !slices.Contains(Events, e) {
			return nil, fmt.Errorf("unknown webhook event %q (known: %s)", n, joinEvents())
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func joinEvents() string {
	s := make([]string, len(Events))
	for i, e := range Events {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// CheckFormat says whether f is a known format ("" is json).
func CheckFormat(f string) (Format, error) {
	if f == "" {
		return JSON, nil
	}
	if !slices.Contains(Formats, Format(f)) {
		return "", fmt.Errorf("unknown webhook format %q (known: json, slack, discord)", f)
	}
	return Format(f), nil
}
