package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Providers lists the providers.
func (c *Client) Providers(ctx context.Context) ([]wire.Provider, error) {
	var l wire.ProviderList
	return l.Providers, c.call(ctx, http.MethodGet, "/api/v1/providers", nil, &l)
}

// Provider returns one provider (by ID or name).
func (c *Client) Provider(ctx context.Context, id string) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodGet, "/api/v1/providers/"+esc(id), nil, &p)
}

// AddProvider adds a provider.
func (c *Client) AddProvider(ctx context.Context, in wire.ProviderInput) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodPost, "/api/v1/providers", in, &p)
}

// UpdateProvider changes a provider (by ID or name).
func (c *Client) UpdateProvider(ctx context.Context, id string, in wire.ProviderInput) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodPatch, "/api/v1/providers/"+esc(id), in, &p)
}

// RemoveProvider deletes a provider (by ID or name).
func (c *Client) RemoveProvider(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/providers/"+esc(id), nil, nil)
}

// TestProvider checks a provider's endpoint and key.
func (c *Client) TestProvider(ctx context.Context, id string) (wire.ProviderTest, error) {
	var r wire.ProviderTest
	return r, c.call(ctx, http.MethodPost, "/api/v1/providers/"+esc(id)+"/test", nil, &r)
}

// Models lists a provider's models.
func (c *Client) Models(ctx context.Context, id string) ([]wire.Model, error) {
	var l wire.ModelList
	return l.Models, c.call(ctx, http.MethodGet, "/api/v1/providers/"+esc(id)+"/models", nil, &l)
}
