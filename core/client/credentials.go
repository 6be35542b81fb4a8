package client

import (
	"context"
	"io"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Credentials lists the stored credentials (never their secrets).
func (c *Client) Credentials(ctx context.Context) ([]wire.Credential, error) {
	var l wire.CredentialList
	return l.Credentials, c.call(ctx, http.MethodGet, "/api/v1/credentials", nil, &l)
}

// AddCredential stores a credential.
func (c *Client) AddCredential(ctx context.Context, in wire.CredentialInput) (wire.Credential, error) {
	var cr wire.Credential
	return cr, c.call(ctx, http.MethodPost, "/api/v1/credentials", in, &cr)
}

// EditCredential changes a credential (by ID or name): the fields given.
func (c *Client) EditCredential(ctx context.Context, id string, p wire.CredentialPatch) (wire.Credential, error) {
	var cr wire.Credential
	return cr, c.call(ctx, http.MethodPatch, "/api/v1/credentials/"+esc(id), p, &cr)
}

// ImportCredentials stores the logins of a browser's password export
// (CSV): all of them, or none.
func (c *Client) ImportCredentials(ctx context.Context, csv io.Reader) ([]wire.Credential, error) {
	var l wire.CredentialList
	return l.Credentials, c.callBody(ctx, http.MethodPost, "/api/v1/credentials/import", csv, "text/csv", &l)
}

// RemoveCredential deletes a credential (by ID or name) and its secrets.
func (c *Client) RemoveCredential(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/credentials/"+esc(id), nil, nil)
}
