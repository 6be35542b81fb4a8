package orchestrator

import (
	"context"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/titles"
)

// newTitler makes the orchestrator's titler (core/titles): the worker
// model, or else the task's own, titles new tasks.
func (o *Orchestrator) newTitler() (*titles.Titler, error) {
	return titles.New(titles.Config{
		Store: o.cfg.Store,
		Model: func(ctx context.Context, t store.Task) (titles.Model, error) {
			c, err := o.titleClient(ctx, t, o.cfg.Settings())
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		FromDescription: func() bool { return o.cfg.Settings().TitleFromDescription },
		Notify:          o.hub.notify,
		Log:             o.cfg.Log,
	})
}

// titleLater asks for a model's title for a new task while the
// orchestrator runs (the request ends with it).
func (o *Orchestrator) titleLater(t store.Task) {
	o.mu.Lock()
	base, closed := o.base, o.closed
	o.mu.Unlock()
	if base == nil || closed {
		return
	}
	o.titles.Later(base, t)
}

// Rename gives a task the user's title, which a generated one never
// replaces.
func (o *Orchestrator) Rename(ctx context.Context, id, title string) (store.Task, error) {
	title, err := titles.CheckUser(title)
	if err != nil {
		return store.Task{}, err
	}
	t, _, err := o.cfg.Store.UpdateTask(ctx, id, store.Update{
		Mutate: func(t *store.Task) error {
			t.Title, t.TitleEdited = title, true
			return nil
		},
		Events: []store.Event{{Type: "status_change", ActivityType: "info", Summary: "Renamed: " + title}},
	})
	if err != nil {
		return store.Task{}, err
	}
	o.hub.notify(id)
	return t, nil
}
