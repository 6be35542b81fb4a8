package store

import (
	"context"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// MCPServer is an MCP server the agents may use (issue 19.2): a stdio
// command or a streamable-HTTP URL. The values of its environment
// variables and headers are in the secret store under SecretRef (one JSON
// object), never in the database; their names are here.
type MCPServer struct {
	ID      string `gorm:"primaryKey"`
	Name    string `gorm:"not null;uniqueIndex"`
	Command string
	Args    []string `gorm:"serializer:json"`
	URL     string
	// EnvNames and HeaderNames name the secret values.
	EnvNames    []string `gorm:"serializer:json"`
	HeaderNames []string `gorm:"serializer:json"`
	// Permission is allow, ask or deny for its tools when the policy does
	// not name them.
	Permission     string `gorm:"not null"`
	TimeoutSeconds int
	Enabled        bool      `gorm:"not null"`
	CreatedAt      time.Time `gorm:"not null"`
}

// SecretRef names the server's environment and headers in the secret store.
func (m MCPServer) SecretRef() string { return "mcp/" + m.ID }

// CreateMCPServer stores a new MCP server (its secret values are the
// caller's to put in the secret store under SecretRef).
func (s *Store) CreateMCPServer(ctx context.Context, m *MCPServer) error {
	return createNamed(ctx, s, m, "MCP server", m.Name, &m.ID, &m.CreatedAt)
}

// ListMCPServers returns every MCP server, by name.
func (s *Store) ListMCPServers(ctx context.Context) ([]MCPServer, error) {
	return listNamed[MCPServer](ctx, s, "MCP server")
}

// FindMCPServer returns the MCP server whose ID or name is nameOrID.
func (s *Store) FindMCPServer(ctx context.Context, nameOrID string) (MCPServer, error) {
	return findNamed[MCPServer](ctx, s, "MCP server", nameOrID)
}

// SetMCPServerEnabled turns an MCP server on or off for new tasks.
func (s *Store) SetMCPServerEnabled(ctx context.Context, nameOrID string, on bool) (MCPServer, error) {
	return setNamedEnabled[MCPServer](ctx, s, "MCP server", nameOrID, on)
}

// DeleteMCPServer deletes an MCP server and returns it (its secrets are
// the caller's to delete).
func (s *Store) DeleteMCPServer(ctx context.Context, nameOrID string) (MCPServer, error) {
	return deleteNamed[MCPServer](ctx, s, "MCP server", nameOrID)
}

// UpdateMCPServer saves an MCP server's command, arguments, URL, the
// names of its environment variables and headers, its permission,
// timeout and whether it is on (its secret values are the caller's).
func (s *Store) UpdateMCPServer(ctx context.Context, m MCPServer) error {
	res := s.db.WithContext(ctx).Model(&MCPServer{}).Where("id = ?", m.ID).Select("command", "args", "url", "env_names", "header_names", "permission", "timeout_seconds", "enabled").Updates(&m)
	return affected(res, "update MCP server "+m.Name, errdefs.NotFoundf("MCP server %q not found", m.Name))
}
