package store

import (
	"context"
	"time"
)

// Webhook is an address told of task events (core/webhooks). Its signing
// secret, if any, is in the secret store under SecretRef.
type Webhook struct {
	ID   string `gorm:"primaryKey"`
	Name string `gorm:"not null;uniqueIndex"`
	URL  string `gorm:"not null"`
	// Format is json, slack or discord.
	Format string `gorm:"not null"`
	// Events it is sent; none: all.
	Events    []string  `gorm:"serializer:json"`
	HasSecret bool      `gorm:"not null"`
	Enabled   bool      `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
}

// SecretRef names the webhook's signing secret in the secret store.
func (w Webhook) SecretRef() string { return "webhook/" + w.ID }

// CreateWebhook stores a new webhook (its secret is the caller's to put in
// the secret store under SecretRef).
func (s *Store) CreateWebhook(ctx context.Context, w *Webhook) error {
	return createNamed(ctx, s, w, "webhook", w.Name, &w.ID, &w.CreatedAt)
}

// ListWebhooks returns every webhook, by name.
func (s *Store) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	return listNamed[Webhook](ctx, s, "webhook")
}

// FindWebhook returns the webhook whose ID or name is nameOrID.
func (s *Store) FindWebhook(ctx context.Context, nameOrID string) (Webhook, error) {
	return findNamed[Webhook](ctx, s, "webhook", nameOrID)
}

// SetWebhookEnabled turns a webhook on or off.
func (s *Store) SetWebhookEnabled(ctx context.Context, nameOrID string, on bool) (Webhook, error) {
	return setNamedEnabled[Webhook](ctx, s, "webhook", nameOrID, on)
}

// DeleteWebhook deletes a webhook and returns it (its secret is the
// caller's to delete).
func (s *Store) DeleteWebhook(ctx context.Context, nameOrID string) (Webhook, error) {
	return deleteNamed[Webhook](ctx, s, "webhook", nameOrID)
}
