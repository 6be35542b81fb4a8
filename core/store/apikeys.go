package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// APIKey is a bearer key of the REST API, stored as a SHA-256 hash. Prefix is
// the first characters of the key, shown in listings and used to find the row.
type APIKey struct {
	ID         string    `gorm:"primaryKey"`
	Name       string    `gorm:"not null"`
	Prefix     string    `gorm:"not null;index"`
	Hash       []byte    `gorm:"not null;uniqueIndex"`
	CreatedAt  time.Time `gorm:"not null"`
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// APIKeyPrefix starts every API key.
const APIKeyPrefix = "hc_"

// apiKeyLookupLen is how many leading characters of a key are stored in clear
// to find its row; the rest is only ever stored hashed.
const apiKeyLookupLen = len(APIKeyPrefix) + 8

// ErrBadAPIKey is returned by VerifyAPIKey for a key that is malformed,
// unknown or revoked; callers answer 401 without saying which.
var ErrBadAPIKey = errors.New("invalid API key")

// lastUsedGranularity limits LastUsedAt writes to one per key per minute, so
// authenticating a request is a read, not a write, almost always.
const lastUsedGranularity = time.Minute

// CreateAPIKey creates a key named name and returns it in clear, once; only
// its hash is stored.
func (s *Store) CreateAPIKey(ctx context.Context, name string) (string, APIKey, error) {
	var key string
	var row APIKey
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var err error
		key, row, err = createAPIKey(tx, name)
		return err
	})
	return key, row, err
}

// ReplaceAPIKey revokes every active key named name and creates a new one in
// the same transaction (the key `make run` prints is replaced each run).
func (s *Store) ReplaceAPIKey(ctx context.Context, name string) (string, APIKey, error) {
	var key string
	var row APIKey
	err := s.tx(ctx, func(tx *gorm.DB) error {
		now := time.Now().UTC()
		if err := tx.Model(&APIKey{}).Where("name = ? AND revoked_at IS NULL", name).Update("revoked_at", now).Error; err != nil {
			return fmt.Errorf("revoke API keys named %q: %w", name, classify(err))
		}
		var err error
		key, row, err = createAPIKey(tx, name)
		return err
	})
	return key, row, err
}

func createAPIKey(tx *gorm.DB, name string) (string, APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", APIKey{}, errdefs.Invalidf("an API key needs a name")
	}
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", APIKey{}, fmt.Errorf("create API key: %w", err)
	}
	key := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	row := APIKey{
		ID:        uuid.NewString(),
		Name:      name,
		Prefix:    key[:apiKeyLookupLen],
		Hash:      sum[:],
		CreatedAt: time.Now().UTC(),
	}
	if err := tx.Create(&row).Error; err != nil {
		return "", APIKey{}, fmt.Errorf("create API key: %w", classify(err))
	}
	return key, row, nil
}

// VerifyAPIKey returns the active key matching key, comparing hashes in
// constant time, or ErrBadAPIKey.
func (s *Store) VerifyAPIKey(ctx context.Context, key string) (APIKey, error) {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) < apiKeyLookupLen+16 || len(key) > 256 {
		return APIKey{}, ErrBadAPIKey
	}
	sum := sha256.Sum256([]byte(key))
	var candidates []APIKey
	err := s.db.WithContext(ctx).Where("prefix = ? AND revoked_at IS NULL", key[:apiKeyLookupLen]).Find(&candidates).Error
	if err != nil {
		return APIKey{}, fmt.Errorf("verify API key: %w", classify(err))
	}
	var match *APIKey
	for i := range candidates {
		// Compare against every candidate so timing does not say which matched.
		if subtle.ConstantTimeCompare(candidates[i].Hash, sum[:]) == 1 {
			match = &candidates[i]
		}
	}
	if match == nil {
		return APIKey{}, ErrBadAPIKey
	}
	now := time.Now().UTC()
	if match.LastUsedAt == nil || now.Sub(*match.LastUsedAt) >= lastUsedGranularity {
		// Best effort: a busy database must not fail an authenticated request.
		if err := s.db.WithContext(ctx).Model(match).Update("last_used_at", now).Error; err != nil {
			s.log.Debug("record API key use", "key", match.Prefix, "err", err)
		} else {
			match.LastUsedAt = &now
		}
	}
	return *match, nil
}

// ListAPIKeys returns every key, newest first, revoked ones included.
func (s *Store) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	return list[APIKey](s.db.WithContext(ctx), "created_at DESC", "list API keys")
}

// RevokeAPIKey revokes the key with this id or prefix. Revoking a revoked key
// is a no-op; an unknown one is ErrNotFound.
func (s *Store) RevokeAPIKey(ctx context.Context, idOrPrefix string) error {
	res := s.db.WithContext(ctx).Model(&APIKey{}).
		Where("(id = ? OR prefix = ?) AND revoked_at IS NULL", idOrPrefix, idOrPrefix).
		Update("revoked_at", time.Now().UTC())
	if res.Error != nil {
		return fmt.Errorf("revoke API key: %w", classify(res.Error))
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := s.db.WithContext(ctx).Model(&APIKey{}).Where("id = ? OR prefix = ?", idOrPrefix, idOrPrefix).Count(&n).Error; err != nil {
			return fmt.Errorf("revoke API key: %w", classify(err))
		}
		if n == 0 {
			return errdefs.NotFoundf("API key %q not found", idOrPrefix)
		}
	}
	return nil
}
