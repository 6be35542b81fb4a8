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

// Credential is a login the agent may use without seeing it: its password
// and TOTP seed are in the secret store (SecretRef names them), never in
// the database.
type Credential struct {
	ID       string `gorm:"primaryKey"`
	Name     string `gorm:"not null;uniqueIndex"`
	Username string
	// AllowedApps, when set, are the applications (names, comma-separated)
	// that must be in front for its secrets to be typed.
	AllowedApps string
	HasTOTP     bool
	SecretRef   string
	CreatedAt   time.Time `gorm:"not null"`
}

// SecretRefs name a credential's password and TOTP seed in the secret store.
func (c Credential) SecretRefs() (password, totp string) {
	return "credential/" + c.ID + "/password", "credential/" + c.ID + "/totp"
}

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
	return credentialErr(s.db.WithContext(ctx).Create(c).Error, c.Name, "create")
}

// ListCredentials returns every credential, by name.
func (s *Store) ListCredentials(ctx context.Context) ([]Credential, error) {
	return list[Credential](s.db.WithContext(ctx), "name", "list credentials")
}

// FindCredential returns the credential whose ID or name is nameOrID.
func (s *Store) FindCredential(ctx context.Context, nameOrID string) (Credential, error) {
	return findNamed[Credential](ctx, s, "credential", nameOrID)
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

// CreateCredentials stores new credentials in one transaction: all of
// them, or none when one cannot be (a name taken, say).
func (s *Store) CreateCredentials(ctx context.Context, cs []*Credential) error {
	now := time.Now().UTC()
	for _, c := range cs {
		c.Name = strings.TrimSpace(c.Name)
		if err := checkCredentialName(c.Name); err != nil {
			return err
		}
		if c.ID == "" {
			c.ID = uuid.NewString()
		}
		c.CreatedAt = now
	}
	return s.tx(ctx, func(tx *gorm.DB) error {
		for _, c := range cs {
			if err := credentialErr(tx.Create(c).Error, c.Name, "create"); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpdateCredential saves a credential's name, username, applications and
// whether it has a TOTP seed (its secrets are the caller's).
func (s *Store) UpdateCredential(ctx context.Context, c Credential) error {
	c.Name = strings.TrimSpace(c.Name)
	if err := checkCredentialName(c.Name); err != nil {
		return err
	}
	res := s.db.WithContext(ctx).Model(&Credential{}).Where("id = ?", c.ID).
		Updates(map[string]any{"name": c.Name, "username": c.Username, "allowed_apps": c.AllowedApps, "has_totp": c.HasTOTP})
	if err := credentialErr(res.Error, c.Name, "update"); err != nil {
		return err
	}
	if res.RowsAffected == 0 {
		return errdefs.NotFoundf("credential %q not found", c.ID)
	}
	return nil
}

// credentialErr classifies an error of writing a credential named name.
func credentialErr(err error, name, op string) error {
	if errors.Is(err, gorm.ErrDuplicatedKey) || (err != nil && strings.Contains(err.Error(), "UNIQUE")) {
		return errdefs.Conflictf("a credential named %q exists already", name)
	}
	if err != nil {
		return fmt.Errorf("%s credential: %w", op, classify(err))
	}
	return nil
}
