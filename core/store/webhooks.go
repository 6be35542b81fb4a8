package store

import "context"

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
