package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Webhooks lists the webhooks (their addresses redacted, never their
// secrets).
func (c *Client) Webhooks(ctx context.Context) ([]wire.Webhook, error) {
	var l wire.WebhookList
	return l.Webhooks, c.call(ctx, http.MethodGet, "/api/v1/webhooks", nil, &l)
}

// AddWebhook adds a webhook.
func (c *Client) AddWebhook(ctx context.Context, in wire.WebhookInput) (wire.Webhook, error) {
	var w wire.Webhook
	return w, c.call(ctx, http.MethodPost, "/api/v1/webhooks", in, &w)
}

// TestWebhook sends a webhook (by ID or name) a test notice.
func (c *Client) TestWebhook(ctx context.Context, id string) (wire.WebhookTest, error) {
	var r wire.WebhookTest
	return r, c.call(ctx, http.MethodPost, "/api/v1/webhooks/"+esc(id)+"/test", nil, &r)
}

// SetWebhookEnabled turns a webhook (by ID or name) on or off.
func (c *Client) SetWebhookEnabled(ctx context.Context, id string, on bool) (wire.Webhook, error) {
	var w wire.Webhook
	return w, c.call(ctx, http.MethodPatch, "/api/v1/webhooks/"+esc(id), map[string]bool{"enabled": on}, &w)
}

// RemoveWebhook removes a webhook (by ID or name) and its secret.
func (c *Client) RemoveWebhook(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/webhooks/"+esc(id), nil, nil)
}
