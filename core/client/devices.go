package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// LoginLink mints a one-time link to the web UI (unix socket only).
func (c *Client) LoginLink(ctx context.Context) (wire.LoginLink, error) {
	var l wire.LoginLink
	return l, c.call(ctx, http.MethodPost, "/api/v1/auth/login-link", nil, &l)
}

// Pairings lists the devices waiting for an answer to their pairing code.
func (c *Client) Pairings(ctx context.Context) ([]wire.Pairing, error) {
	var l wire.PairingList
	return l.Pairings, c.call(ctx, http.MethodGet, "/api/v1/auth/pairings", nil, &l)
}

// ApprovePairing approves the device showing code: its next poll signs it in.
func (c *Client) ApprovePairing(ctx context.Context, code string) (wire.Pairing, error) {
	var p wire.Pairing
	return p, c.call(ctx, http.MethodPost, "/api/v1/auth/pairings/"+esc(code)+"/approve", nil, &p)
}

// DenyPairing refuses the device showing code.
func (c *Client) DenyPairing(ctx context.Context, code string) (wire.Pairing, error) {
	var p wire.Pairing
	return p, c.call(ctx, http.MethodPost, "/api/v1/auth/pairings/"+esc(code)+"/deny", nil, &p)
}

// Devices lists the paired devices.
func (c *Client) Devices(ctx context.Context) ([]wire.Device, error) {
	var l wire.DeviceList
	return l.Devices, c.call(ctx, http.MethodGet, "/api/v1/auth/devices", nil, &l)
}

// RemoveDevice revokes a paired device: its session ends at once.
func (c *Client) RemoveDevice(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/auth/devices/"+esc(id), nil, nil)
}
