package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// CreatePreset saves a preset, with input files as multipart.
func (c *Client) CreatePreset(ctx context.Context, in wire.SavePreset, files ...string) (wire.Preset, error) {
	var p wire.Preset
	return p, c.postWithFiles(ctx, "/api/v1/presets", "preset", in, files, &p)
}

// Presets lists the presets, most recently used first.
func (c *Client) Presets(ctx context.Context) (wire.PresetList, error) {
	var l wire.PresetList
	return l, c.call(ctx, http.MethodGet, "/api/v1/presets", nil, &l)
}

// Preset returns a preset by id or name.
func (c *Client) Preset(ctx context.Context, idOrName string) (wire.Preset, error) {
	var p wire.Preset
	return p, c.call(ctx, http.MethodGet, "/api/v1/presets/"+esc(idOrName), nil, &p)
}

// UpdatePreset renames a preset or replaces its task.
func (c *Client) UpdatePreset(ctx context.Context, idOrName string, in wire.SavePreset) (wire.Preset, error) {
	var p wire.Preset
	return p, c.call(ctx, http.MethodPatch, "/api/v1/presets/"+esc(idOrName), in, &p)
}

// RemovePreset deletes a preset.
func (c *Client) RemovePreset(ctx context.Context, idOrName string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/presets/"+esc(idOrName), nil, nil)
}

// RunPreset launches a preset's task.
func (c *Client) RunPreset(ctx context.Context, idOrName string, in wire.RunPreset) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodPost, "/api/v1/presets/"+esc(idOrName)+"/run", in, &t)
}
