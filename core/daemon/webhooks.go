package daemon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/secrets"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/webhooks"
)

// webhookLoader returns the webhooks of the store with their signing
// secrets, for the Sender. One whose secret cannot be read is left out
// (and logged): unsigned is not what its receiver expects.
func webhookLoader(st *store.Store, sec secrets.Store, log *slog.Logger) func(context.Context) ([]webhooks.Hook, error) {
	return func(ctx context.Context) ([]webhooks.Hook, error) {
		rows, err := st.ListWebhooks(ctx)
		if err != nil {
			return nil, err
		}
		hooks := make([]webhooks.Hook, 0, len(rows))
		for _, w := range rows {
			h := webhooks.Hook{ID: w.ID, Name: w.Name, URL: w.URL, Format: webhooks.Format(w.Format), Disabled: !w.Enabled}
			for _, e := range w.Events {
				h.Events = append(h.Events, webhooks.Event(e))
			}
			if w.HasSecret {
				if h.Secret, err = sec.Get(w.SecretRef()); err != nil || h.Secret == "" {
					if err == nil || errors.Is(err, errdefs.ErrNotFound) {
						err = errors.New("the secret store has lost it: remove the webhook and add it again")
					}
					log.Error("webhook left out: its signing secret cannot be read", "webhook", w.Name, "err", err)
					continue
				}
			}
			hooks = append(hooks, h)
		}
		return hooks, nil
	}
}

// webhookPayload turns an orchestrator's notice into a webhook's.
func webhookPayload(n orchestrator.Notice) webhooks.Payload {
	t := n.Task
	p := webhooks.Payload{Event: webhooks.Event(n.Event),
		Task: webhooks.Task{ID: t.ID, Title: t.Title, Status: string(t.Status), WasSuccessful: t.WasSuccessful}}
	if t.Status.Terminal() && t.ResultSummary != nil {
		p.Task.Result = *t.ResultSummary
	}
	if q := n.Question; q != nil {
		p.Question = &webhooks.Question{ID: q.ID, Text: q.Question, Options: q.Options}
	}
	if pr := n.Permission; pr != nil {
		p.Permission = &webhooks.Permission{ID: pr.ID, Tool: pr.ToolName, Details: pr.Details}
	}
	return p
}
