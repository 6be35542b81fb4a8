package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
)

// Provider is an LLM endpoint. The API key itself never enters the
// database: SecretRef names it in the secret store.
type Provider struct {
	ID          string `gorm:"primaryKey"`
	DisplayName string `gorm:"not null;uniqueIndex"`
	// Type is the protocol it speaks (llm.TypeOpenAICompatible,
	// llm.TypeAnthropic or llm.TypeOpenAI); providers stored before types
	// existed are openai-compatible.
	Type    string `gorm:"not null;default:openai-compatible"`
	BaseURL string `gorm:"not null"`
	// BackendMode is the API of an openai-compatible or openai provider
	// (llm.BackendChatCompletions or llm.BackendResponses); an anthropic
	// provider has only its Messages API and keeps chat_completions here,
	// unused.
	BackendMode    string `gorm:"not null;default:chat_completions"`
	AuthMode       string `gorm:"not null;default:api_key"`
	IsDefault      bool
	DefaultModelID string
	TimeoutSeconds int
	// OrganizationID is sent as the OpenAI-Organization header.
	OrganizationID string
	// DefaultReasoningEffort is the reasoning effort of its tasks that ask
	// for none of their own ("": the model's default).
	DefaultReasoningEffort string
	SecretRef              string
	CreatedAt              time.Time `gorm:"not null"`
	UpdatedAt              time.Time
}

// checkProvider validates a provider's fields and fills the defaults of
// its type: openai-compatible when none is given; the vendor's base URL
// for anthropic and openai (openai-compatible has none: its base URL is
// required); the Responses API for openai, Chat Completions otherwise.
// An anthropic provider speaks only Anthropic's Messages API: its
// backend mode stays chat_completions, unused, and responses is refused
// rather than stored and ignored.
func checkProvider(p *Provider) error {
	p.DisplayName = strings.TrimSpace(p.DisplayName)
	if p.DisplayName == "" {
		return errdefs.Invalidf("a provider needs a displayName")
	}
	t, err := llm.NormalizeType(p.Type)
	if err != nil {
		return err
	}
	p.Type = t
	if p.BaseURL == "" {
		p.BaseURL = llm.DefaultBaseURL(t)
	}
	if p.BaseURL == "" {
		return errdefs.Invalidf("an %s provider needs a baseURL, such as https://openrouter.ai/api/v1 or http://localhost:11434/v1 (%s and %s providers have their vendor's by default)",
			t, llm.TypeAnthropic, llm.TypeOpenAI)
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errdefs.Invalidf("baseURL %q: want an http(s) URL such as https://api.openai.com/v1", p.BaseURL)
	}
	if p.BackendMode == "" {
		p.BackendMode = llm.DefaultBackend(t)
	}
	if p.BackendMode != llm.BackendChatCompletions && p.BackendMode != llm.BackendResponses {
		return errdefs.Invalidf("backendMode %q: want chat_completions or responses", p.BackendMode)
	}
	if t == llm.TypeAnthropic && p.BackendMode != llm.BackendChatCompletions {
		return errdefs.Invalidf("backendMode %q: an %s provider speaks Anthropic's Messages API only; leave backendMode out", p.BackendMode, t)
	}
	if p.AuthMode == "" {
		p.AuthMode = "api_key"
	}
	if p.TimeoutSeconds < 0 {
		return errdefs.Invalidf("timeoutInterval %d: must not be negative", p.TimeoutSeconds)
	}
	return nil
}

// CreateProvider stores a new provider. The first provider, or one marked
// default, becomes the default.
func (s *Store) CreateProvider(ctx context.Context, p *Provider) error {
	if err := checkProvider(p); err != nil {
		return err
	}
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	p.CreatedAt = time.Now().UTC()
	return s.tx(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&Provider{}).Count(&n).Error; err != nil {
			return fmt.Errorf("create provider: %w", classify(err))
		}
		if n == 0 {
			p.IsDefault = true
		}
		if err := uniqueName(tx, p); err != nil {
			return err
		}
		if err := claimDefault(tx, p); err != nil {
			return err
		}
		if err := tx.Create(p).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return errdefs.Conflictf("a provider named %q exists already", p.DisplayName)
			}
			return fmt.Errorf("create provider: %w", classify(err))
		}
		return nil
	})
}

// uniqueName refuses a display name another provider has, in any case
// (tasks find providers by name, case-insensitively).
func uniqueName(tx *gorm.DB, p *Provider) error {
	var n int64
	if err := tx.Model(&Provider{}).Where("LOWER(display_name) = LOWER(?) AND id <> ?", p.DisplayName, p.ID).Count(&n).Error; err != nil {
		return fmt.Errorf("check provider name: %w", classify(err))
	}
	if n > 0 {
		return errdefs.Conflictf("a provider named %q exists already", p.DisplayName)
	}
	return nil
}

// claimDefault clears the default flag of other providers when p is default.
func claimDefault(tx *gorm.DB, p *Provider) error {
	if !p.IsDefault {
		return nil
	}
	if err := tx.Model(&Provider{}).Where("id <> ? AND is_default", p.ID).Update("is_default", false).Error; err != nil {
		return fmt.Errorf("set default provider: %w", classify(err))
	}
	return nil
}

// UpdateProvider edits a provider atomically.
func (s *Store) UpdateProvider(ctx context.Context, id string, mutate func(*Provider) error) (Provider, error) {
	var p Provider
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := take(tx, "provider", id, &p); err != nil {
			return err
		}
		wasDefault := p.IsDefault
		if err := mutate(&p); err != nil {
			return err
		}
		if err := checkProvider(&p); err != nil {
			return err
		}
		if wasDefault && !p.IsDefault {
			return errdefs.Invalidf("make another provider the default instead of unsetting this one")
		}
		if err := uniqueName(tx, &p); err != nil {
			return err
		}
		if err := claimDefault(tx, &p); err != nil {
			return err
		}
		if err := tx.Save(&p).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return errdefs.Conflictf("a provider named %q exists already", p.DisplayName)
			}
			return fmt.Errorf("update provider %s: %w", id, classify(err))
		}
		return nil
	})
	return p, err
}

// DeleteProvider deletes a provider; when it was the default, the oldest
// remaining one becomes the default.
func (s *Store) DeleteProvider(ctx context.Context, id string) (Provider, error) {
	var p Provider
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if err := take(tx, "provider", id, &p); err != nil {
			return err
		}
		if err := tx.Delete(&p).Error; err != nil {
			return fmt.Errorf("delete provider %s: %w", id, classify(err))
		}
		if !p.IsDefault {
			return nil
		}
		var next Provider
		err := tx.Order("created_at, id").Take(&next).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete provider %s: %w", id, classify(err))
		}
		return tx.Model(&next).Update("is_default", true).Error
	})
	return p, err
}

// ListProviders returns every provider, oldest first.
func (s *Store) ListProviders(ctx context.Context) ([]Provider, error) {
	return list[Provider](s.db.WithContext(ctx), "created_at, id", "list providers")
}

// FindProvider returns the provider whose ID or display name is
// nameOrID (names case-insensitively); an empty nameOrID means the default.
func (s *Store) FindProvider(ctx context.Context, nameOrID string) (Provider, error) {
	q := s.db.WithContext(ctx).Where("id = ? OR LOWER(display_name) = LOWER(?)", nameOrID, nameOrID)
	missing := errdefs.NotFoundf("provider %q not found", nameOrID)
	if nameOrID == "" {
		q, missing = s.db.WithContext(ctx).Where("is_default"), errdefs.NotFoundf("no default provider")
	}
	return first[Provider](q.Order(clause.Expr{SQL: "id = ? DESC", Vars: []any{nameOrID}}), missing, fmt.Sprintf("find provider %q", nameOrID))
}
