package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/wire"
)

// StopAll is the kill switch.
func (c *Client) StopAll(ctx context.Context) (wire.StopAll, error) {
	var s wire.StopAll
	return s, c.call(ctx, http.MethodPost, "/api/v1/system/stop-all", nil, &s)
}

// Status returns the helper's status.
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	var s wire.Status
	return s, c.call(ctx, http.MethodGet, "/api/v1/system/status", nil, &s)
}

// SystemConfig returns the helper's configuration summary.
func (c *Client) SystemConfig(ctx context.Context) (wire.SystemConfig, error) {
	var s wire.SystemConfig
	return s, c.call(ctx, http.MethodGet, "/api/v1/system/config", nil, &s)
}

// Settings returns the settings.
func (c *Client) Settings(ctx context.Context) (config.Settings, error) {
	var s config.Settings
	return s, c.call(ctx, http.MethodGet, "/api/v1/settings", nil, &s)
}

// PatchSettings changes some settings (a JSON object of the fields to set).
func (c *Client) PatchSettings(ctx context.Context, patch any) (config.Settings, error) {
	var s config.Settings
	return s, c.call(ctx, http.MethodPatch, "/api/v1/settings", patch, &s)
}

// Provisioning returns what VMs are given as they start (never a secret's
// value).
func (c *Client) Provisioning(ctx context.Context) (wire.Provisioning, error) {
	var p wire.Provisioning
	return p, c.call(ctx, http.MethodGet, "/api/v1/provisioning", nil, &p)
}

// SetProvisioning replaces the provisioning with body, a JSON object in
// wire.Provisioning's shape (sent as it is, so that the helper judges it).
func (c *Client) SetProvisioning(ctx context.Context, body json.RawMessage) (wire.Provisioning, error) {
	var p wire.Provisioning
	return p, c.call(ctx, http.MethodPut, "/api/v1/provisioning", body, &p)
}

// VMs lists the VMs.
func (c *Client) VMs(ctx context.Context) ([]wire.VM, error) {
	var l wire.VMList
	return l.VMs, c.call(ctx, http.MethodGet, "/api/v1/vms", nil, &l)
}

// StopVM stops and removes a VM (its task fails).
func (c *Client) StopVM(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/vms/"+esc(id)+"/stop", nil, nil)
}

// OpenVM boots a developer VM of a template: no agent, the user's by hand
// until RemoveVM.
func (c *Client) OpenVM(ctx context.Context, templateID string) (wire.VM, error) {
	var v wire.VM
	return v, c.call(ctx, http.MethodPost, "/api/v1/vms", wire.OpenVM{TemplateID: templateID}, &v)
}

// RemoveVM stops and removes a VM.
func (c *Client) RemoveVM(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/vms/"+esc(id), nil, nil)
}

// CreateAPIKey creates an API key; the key is in the answer only.
func (c *Client) CreateAPIKey(ctx context.Context, name string) (wire.CreatedAPIKey, error) {
	var k wire.CreatedAPIKey
	return k, c.call(ctx, http.MethodPost, "/api/v1/apikeys", map[string]string{"name": name}, &k)
}

// APIKeys lists API keys.
func (c *Client) APIKeys(ctx context.Context) ([]wire.APIKey, error) {
	var l wire.APIKeyList
	return l.Keys, c.call(ctx, http.MethodGet, "/api/v1/apikeys", nil, &l)
}

// RevokeAPIKey revokes a key by ID or prefix.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/apikeys/"+esc(id), nil, nil)
}
