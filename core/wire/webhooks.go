package wire

import (
	"time"
)

// Webhook is an address told of task events (extension). Its URL is
// answered with its path and query hidden (a Slack or Discord address is
// itself a secret), and its signing secret never.
type Webhook struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// Format is json, slack or discord.
	Format string `json:"format"`
	// Events it is sent (task.ended, task.question, task.permission,
	// task.review); empty: all.
	Events    []string  `json:"events"`
	HasSecret bool      `json:"hasSecret"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"createdAt"`
}

// WebhookList is the answer of GET /webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookInput is the body of POST /webhooks. Secret is write-only.
type WebhookInput struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Format  string   `json:"format,omitempty"`
	Events  []string `json:"events,omitempty"`
	Secret  string   `json:"secret,omitempty"`
	Enabled *bool    `json:"enabled,omitempty"`
}

// WebhookTest is the answer of POST /webhooks/:id/test: the receiver's
// answer, or why there was none.
type WebhookTest struct {
	OK bool `json:"ok"`
	// Status is the HTTP status it answered (0: none).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}
