package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// checkCredentialName refuses a name the agent could not say back: empty,
// over 64 bytes, or with control or format characters.
func checkCredentialName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
		return errdefs.Invalidf("credential name %q: want 1 to 64 printable characters", name)
	}
	return nil
}

// CreateCredential stores a new credential (its secrets are the caller's
// to put in the secret store under SecretRef).
func (s *Store) CreateCredential(ctx context.Context, c *Credential) error {
	c.Name = strings.TrimSpace(c.Name)
	if err := checkCredentialName(c.Name); err != nil {
		return err
	}
	if c.ID == "" {
		c.ID = uuid.NewString()
	}
	c.CreatedAt = time.Now().UTC()
	err := s.db.WithContext(ctx).Create(c).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE")) {
		return errdefs.Conflictf("a credential named %q exists already", c.Name)
	}
	if err != nil {
		return fmt.Errorf("create credential: %w", classify(err))
	}
	return nil
}

// ListCredentials returns every credential, by name.
func (s *Store) ListCredentials(ctx context.Context) ([]Credential, error) {
	var cs []Credential
	if err := s.db.WithContext(ctx).Order("name").Find(&cs).Error; err != nil {
		return nil, fmt.Errorf("list credentials: %w", classify(err))
	}
	return cs, nil
}

// FindCredential returns the credential whose ID or name is nameOrID.
func (s *Store) FindCredential(ctx context.Context, nameOrID string) (Credential, error) {
	var c Credential
	err := s.db.WithContext(ctx).Where("id = ? OR name = ?", nameOrID, nameOrID).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return c, errdefs.NotFoundf("credential %q not found", nameOrID)
	}
	if err != nil {
		return c, fmt.Errorf("find credential %q: %w", nameOrID, classify(err))
	}
	return c, nil
}

// DeleteCredential deletes a credential and returns it (its secrets are the
// caller's to delete).
func (s *Store) DeleteCredential(ctx context.Context, nameOrID string) (Credential, error) {
	c, err := s.FindCredential(ctx, nameOrID)
	if err != nil {
		return c, err
	}
	if err := s.db.WithContext(ctx).Delete(&c).Error; err != nil {
		return c, fmt.Errorf("delete credential %q: %w", nameOrID, classify(err))
	}
	return c, nil
}
