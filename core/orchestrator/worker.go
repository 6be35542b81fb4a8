package orchestrator

import (
	"context"
	"fmt"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// The worker model (issue 36.2): Settings' workerProviderName and
// workerModelId name a provider and a model that serve where a task's own
// model is not needed: the subagents a task starts, the titles of new
// tasks, and the condensing of long histories.
// Unset, each task's own model serves them, as before. A worker whose
// provider is gone is said where it would have served, and the task's own
// model serves instead.

// worker returns the worker model's provider, or ok false when Settings
// name none. A provider that is gone is an error.
func (o *Orchestrator) worker(ctx context.Context, settings config.Settings) (store.Provider, bool, error) {
	if !settings.HasWorker() {
		return store.Provider{}, false, nil
	}
	p, err := o.cfg.Store.FindProvider(ctx, settings.WorkerProviderName)
	if err != nil {
		return store.Provider{}, true, fmt.Errorf("the worker model's provider %q: %w", settings.WorkerProviderName, err)
	}
	return p, true, nil
}

// workerClient returns a client of the worker model, nil when Settings
// name none.
func (o *Orchestrator) workerClient(ctx context.Context, settings config.Settings) (*llm.Client, error) {
	p, ok, err := o.worker(ctx, settings)
	if !ok || err != nil {
		return nil, err
	}
	return o.clientFor(p, settings.WorkerModelID, settings, "")
}

// condenser is the model that condenses a task's long history: the worker
// model, unless it is the task's own or none is set (nil: the task's own
// model condenses). A worker that cannot be had is said in the task's
// activity.
func (o *Orchestrator) condenser(ctx context.Context, r *run, t store.Task, settings config.Settings) *llm.Client {
	p, ok, err := o.worker(ctx, settings)
	if ok && err == nil && p.DisplayName == t.ProviderName && settings.WorkerModelID == t.ModelID {
		return nil // the task's own model
	}
	var c *llm.Client
	if ok && err == nil {
		c, err = o.clientFor(p, settings.WorkerModelID, settings, "")
	}
	if err != nil {
		o.emitInfo(r, fmt.Sprintf("%v: the task's own model condenses its history if it grows long", err))
		return nil
	}
	return c
}

// titleClient is the client that titles task t: the worker model's, else
// (none set, or its provider gone) the task's own.
func (o *Orchestrator) titleClient(ctx context.Context, t store.Task, settings config.Settings) (*llm.Client, error) {
	c, err := o.workerClient(ctx, settings)
	if err != nil {
		o.cfg.Log.Warn("the worker model cannot title the task: its own model does", "task", t.ID, "err", err)
	}
	if c != nil {
		return c, nil
	}
	p, err := o.cfg.Store.FindProvider(ctx, t.ProviderName)
	if err != nil {
		return nil, err
	}
	return o.clientFor(p, t.ModelID, settings, "")
}
