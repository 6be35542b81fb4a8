package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Templates lists the templates.
func (c *Client) Templates(ctx context.Context) (wire.TemplateList, error) {
	var l wire.TemplateList
	return l, c.call(ctx, http.MethodGet, "/api/v1/templates", nil, &l)
}

// Template returns one template (with its build progress while it builds).
func (c *Client) Template(ctx context.Context, id string) (wire.Template, error) {
	var t wire.Template
	return t, c.call(ctx, http.MethodGet, "/api/v1/templates/"+esc(id), nil, &t)
}

// CreateTemplate starts building a template from a manifest, or sealing a
// VM (in.FromVMID); the answer is the new template, status "building".
func (c *Client) CreateTemplate(ctx context.Context, in wire.CreateTemplate) (wire.Template, error) {
	var t wire.Template
	return t, c.call(ctx, http.MethodPost, "/api/v1/templates", in, &t)
}

// UpdateTemplate edits a template.
func (c *Client) UpdateTemplate(ctx context.Context, id string, in wire.TemplatePatch) (wire.Template, error) {
	var t wire.Template
	return t, c.call(ctx, http.MethodPatch, "/api/v1/templates/"+esc(id), in, &t)
}

// DeleteTemplate deletes a template (refused while a VM uses it).
func (c *Client) DeleteTemplate(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/templates/"+esc(id), nil, nil)
}

// SetDefaultTemplate makes a template the default.
func (c *Client) SetDefaultTemplate(ctx context.Context, id string) (wire.Template, error) {
	var t wire.Template
	return t, c.call(ctx, http.MethodPost, "/api/v1/templates/"+esc(id)+"/default", nil, &t)
}

// TemplateManifests lists the manifests the helper ships.
func (c *Client) TemplateManifests(ctx context.Context) ([]wire.Manifest, error) {
	var l wire.ManifestList
	return l.Manifests, c.call(ctx, http.MethodGet, "/api/v1/templates/manifests", nil, &l)
}

// TemplateLog writes a template's build log to w.
func (c *Client) TemplateLog(ctx context.Context, id string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/templates/"+esc(id)+"/log", w)
}

// RebuildVM replaces an idle VM with a fresh clone of its template.
func (c *Client) RebuildVM(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/vms/"+esc(id)+"/rebuild", nil, nil)
}

// SetupTemplate boots a macOS template for its guided setup, or finishes
// the setup.
func (c *Client) SetupTemplate(ctx context.Context, id string, req wire.TemplateSetupRequest) (wire.TemplateSetup, error) {
	var s wire.TemplateSetup
	return s, c.call(ctx, http.MethodPost, "/api/v1/templates/"+esc(id)+"/setup", req, &s)
}

// ExportTemplate writes a template's archive (manifest, disk, checksums)
// to w. A download cut short is an error, never a short archive.
func (c *Client) ExportTemplate(ctx context.Context, id string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/templates/"+esc(id)+"/export", w)
}

// ImportTemplate sends a template archive; name, if set, replaces the
// archive's name. The answer is the new, ready template.
func (c *Client) ImportTemplate(ctx context.Context, archive io.Reader, name string) (wire.Template, error) {
	path := "/api/v1/templates/import"
	if name != "" {
		path += "?name=" + url.QueryEscape(name)
	}
	resp, err := c.send(ctx, http.MethodPost, path, archive, "application/zstd")
	if err != nil {
		return wire.Template{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return wire.Template{}, decodeError(resp)
	}
	var t wire.Template
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return wire.Template{}, fmt.Errorf("import: decode answer: %w", err)
	}
	return t, nil
}

// UpdateTemplateAgent installs the helper's guest agent into a template
// (Linux), or boots a macOS template with the agent kit for its steps.
func (c *Client) UpdateTemplateAgent(ctx context.Context, id string) (wire.Template, error) {
	var t wire.Template
	return t, c.call(ctx, http.MethodPost, "/api/v1/templates/"+esc(id)+"/update-agent", nil, &t)
}
