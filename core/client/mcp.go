package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// MCPServers lists the configured MCP servers (never their secret values).
func (c *Client) MCPServers(ctx context.Context) ([]wire.MCPServer, error) {
	var l wire.MCPServerList
	return l.Servers, c.call(ctx, http.MethodGet, "/api/v1/mcp-servers", nil, &l)
}

// AddMCPServer configures an MCP server.
func (c *Client) AddMCPServer(ctx context.Context, in wire.MCPServerInput) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPost, "/api/v1/mcp-servers", in, &m)
}

// CheckMCPServer starts an MCP server as a task would and lists its tools.
func (c *Client) CheckMCPServer(ctx context.Context, id string) (wire.MCPServerCheck, error) {
	var r wire.MCPServerCheck
	return r, c.call(ctx, http.MethodPost, "/api/v1/mcp-servers/"+esc(id)+"/check", nil, &r)
}

// EditMCPServer changes an MCP server (by ID or name): the fields given.
func (c *Client) EditMCPServer(ctx context.Context, id string, p wire.MCPServerPatch) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPatch, "/api/v1/mcp-servers/"+esc(id), p, &m)
}

// SetMCPServerEnabled turns an MCP server (by ID or name) on or off for new
// tasks.
func (c *Client) SetMCPServerEnabled(ctx context.Context, id string, on bool) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPatch, "/api/v1/mcp-servers/"+esc(id), map[string]bool{"enabled": on}, &m)
}

// RemoveMCPServer removes an MCP server (by ID or name) and its secrets.
func (c *Client) RemoveMCPServer(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/mcp-servers/"+esc(id), nil, nil)
}
