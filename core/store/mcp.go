package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// CreateMCPServer stores a new MCP server (its secret values are the
// caller's to put in the secret store under SecretRef).
func (s *Store) CreateMCPServer(ctx context.Context, m *MCPServer) error {
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	m.CreatedAt = time.Now().UTC()
	err := s.db.WithContext(ctx).Create(m).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE")) {
		return errdefs.Conflictf("an MCP server named %q exists already", m.Name)
	}
	if err != nil {
		return fmt.Errorf("create MCP server: %w", classify(err))
	}
	return nil
}

// ListMCPServers returns every MCP server, by name.
func (s *Store) ListMCPServers(ctx context.Context) ([]MCPServer, error) {
	var ms []MCPServer
	if err := s.db.WithContext(ctx).Order("name").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("list MCP servers: %w", classify(err))
	}
	return ms, nil
}

// FindMCPServer returns the MCP server whose ID or name is nameOrID.
func (s *Store) FindMCPServer(ctx context.Context, nameOrID string) (MCPServer, error) {
	var m MCPServer
	err := s.db.WithContext(ctx).Where("id = ? OR name = ?", nameOrID, nameOrID).Take(&m).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return m, errdefs.NotFoundf("MCP server %q not found", nameOrID)
	}
	if err != nil {
		return m, fmt.Errorf("find MCP server %q: %w", nameOrID, classify(err))
	}
	return m, nil
}

// SetMCPServerEnabled turns an MCP server on or off for new tasks.
func (s *Store) SetMCPServerEnabled(ctx context.Context, nameOrID string, on bool) (MCPServer, error) {
	m, err := s.FindMCPServer(ctx, nameOrID)
	if err != nil {
		return m, err
	}
	if err := s.db.WithContext(ctx).Model(&m).Update("enabled", on).Error; err != nil {
		return m, fmt.Errorf("update MCP server %q: %w", nameOrID, classify(err))
	}
	m.Enabled = on
	return m, nil
}

// DeleteMCPServer deletes an MCP server and returns it (its secrets are
// the caller's to delete).
func (s *Store) DeleteMCPServer(ctx context.Context, nameOrID string) (MCPServer, error) {
	m, err := s.FindMCPServer(ctx, nameOrID)
	if err != nil {
		return m, err
	}
	if err := s.db.WithContext(ctx).Delete(&m).Error; err != nil {
		return m, fmt.Errorf("delete MCP server %q: %w", nameOrID, classify(err))
	}
	return m, nil
}
