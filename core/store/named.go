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

// Rows found by their ID or their unique name (MCP servers, webhooks,
// credentials): kind names the row in errors ("MCP server", "webhook").

// createNamed stores row with a new ID (when *id is empty) and the time
// now; a name in use is a conflict.
func createNamed(ctx context.Context, s *Store, row any, kind, name string, id *string, created *time.Time) error {
	if *id == "" {
		*id = uuid.NewString()
	}
	*created = time.Now().UTC()
	err := s.db.WithContext(ctx).Create(row).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE")) {
		return errdefs.Conflictf("a %s named %q exists already", kind, name)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", kind, classify(err))
	}
	return nil
}

// listNamed returns every row of T, by name.
func listNamed[T any](ctx context.Context, s *Store, kind string) ([]T, error) {
	return list[T](s.db.WithContext(ctx), "name", "list "+kind+"s")
}

// findNamed returns the row of T whose ID or name is nameOrID.
func findNamed[T any](ctx context.Context, s *Store, kind, nameOrID string) (T, error) {
	return first[T](s.db.WithContext(ctx).Where("id = ? OR name = ?", nameOrID, nameOrID),
		errdefs.NotFoundf("%s %q not found", kind, nameOrID), fmt.Sprintf("find %s %q", kind, nameOrID))
}

// setNamedEnabled turns the row of T whose ID or name is nameOrID on or
// off and returns it.
func setNamedEnabled[T any](ctx context.Context, s *Store, kind, nameOrID string, on bool) (T, error) {
	row, err := findNamed[T](ctx, s, kind, nameOrID)
	if err != nil {
		return row, err
	}
	if err := s.db.WithContext(ctx).Model(&row).Update("enabled", on).Error; err != nil {
		return row, fmt.Errorf("update %s %q: %w", kind, nameOrID, classify(err))
	}
	return findNamed[T](ctx, s, kind, nameOrID)
}

// deleteNamed deletes the row of T whose ID or name is nameOrID and
// returns it.
func deleteNamed[T any](ctx context.Context, s *Store, kind, nameOrID string) (T, error) {
	row, err := findNamed[T](ctx, s, kind, nameOrID)
	if err != nil {
		return row, err
	}
	if err := s.db.WithContext(ctx).Delete(&row).Error; err != nil {
		return row, fmt.Errorf("delete %s %q: %w", kind, nameOrID, classify(err))
	}
	return row, nil
}
