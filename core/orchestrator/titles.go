package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/redact"
	"github.com/hivecrew/hivecrew/core/store"
)

// Bounds of title generation: requests at once, requests waiting for one
// of those (more are not made: the task keeps its first title), and the
// time one may take.
const (
	titleRequests = 2
	titleWaiting  = 32
	titleTimeout  = 15 * time.Second
)

// titler bounds the title requests in flight.
type titler struct {
	run  chan struct{} // a slot per request in flight
	wait chan struct{} // a ticket per request started or waiting
}

func newTitler() titler {
	return titler{run: make(chan struct{}, titleRequests), wait: make(chan struct{}, titleRequests+titleWaiting)}
}

// titleLater asks the worker model (worker.go), or else the task's model,
// for a title for a new task, off the task's way: in its own goroutine,
// bounded (titler), and with a time limit. The task has its title from the description meanwhile, and keeps
// it if the request fails, if Settings say titleFromDescription, or if the
// user renames the task first.
func (o *Orchestrator) titleLater(t store.Task) {
	if t.TitleEdited || o.cfg.Settings().TitleFromDescription {
		return
	}
	select {
	case o.titles.wait <- struct{}{}:
	default:
		o.cfg.Log.Warn("too many title requests: the task keeps the start of its description as its title", "task", t.ID)
		return
	}
	o.mu.Lock()
	base, closed := o.base, o.closed
	if base == nil || closed {
		o.mu.Unlock()
		<-o.titles.wait
		return
	}
	o.wg.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.wg.Done()
		defer func() { <-o.titles.wait }()
		select {
		case o.titles.run <- struct{}{}:
		case <-base.Done():
			return
		}
		defer func() { <-o.titles.run }()
		ctx, cancel := context.WithTimeout(base, titleTimeout)
		defer cancel()
		if err := o.generateTitle(ctx, t); err != nil {
			o.cfg.Log.Warn("no title from the model: the task keeps the start of its description", "task", t.ID, "err", err)
		}
	}()
}

// generateTitle makes one title request and stores the answer unless the
// task was renamed meanwhile. Its tokens count as the task's.
func (o *Orchestrator) generateTitle(ctx context.Context, t store.Task) error {
	c, err := o.titleClient(ctx, t, o.cfg.Settings())
	if err != nil {
		return err
	}
	title, usage, err := c.Title(ctx, t.Description)
	cost, _ := c.Cost(usage)
	if err != nil && usage == (llm.Usage{}) {
		return err
	}
	_, _, uerr := o.cfg.Store.UpdateTask(ctx, t.ID, store.Update{Mutate: func(t *store.Task) error {
		if title != "" && !t.TitleEdited {
			t.Title = title
		}
		p, c := int64(usage.Prompt), int64(usage.Completion)
		t.TitlePromptTokens, t.TitleCompletionTokens, t.TitleCostUSD = t.TitlePromptTokens+p, t.TitleCompletionTokens+c, t.TitleCostUSD+cost
		t.PromptTokens, t.CompletionTokens, t.CostUSD = t.PromptTokens+p, t.CompletionTokens+c, t.CostUSD+cost
		return nil
	}})
	if errors.Is(uerr, errdefs.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if uerr != nil {
		return uerr
	}
	o.hub.notify(t.ID)
	return err
}

// Rename gives a task the user's title, which a generated one never
// replaces.
func (o *Orchestrator) Rename(ctx context.Context, id, title string) (store.Task, error) {
	title, err := checkTitle(title)
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

// maxTitleBytes bounds a title the user gives.
const maxTitleBytes = 500

// checkTitle checks a user's title: not empty, on one line, without control
// characters, at most maxTitleBytes.
func checkTitle(title string) (string, error) {
	clean := redact.OneLine(title)
	switch {
	case clean == "":
		return "", errdefs.Invalidf("title is required: the task's new name")
	case len(clean) > maxTitleBytes:
		return "", errdefs.Invalidf("title is %d bytes, over the limit of %d", len(clean), maxTitleBytes)
	}
	return clean, nil
}
