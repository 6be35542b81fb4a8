// Package titles gives new tasks a title from a model, off their way: in
// a goroutine of its own, bounded, with a time limit. A task has its title
// from its description meanwhile, and keeps it if the request fails, if
// titles come from descriptions alone (Settings: titleFromDescription), or
// if the user renames the task first.
//
// It owns the title requests' bounds (TitleRequests at once, TitleWaiting
// more waiting, TitleTimeout each; more are not made), their goroutines
// (Close ends and waits for them), and the checks of a title the user
// gives (CheckUser). It needs from its caller the model that titles a task
// (Config.Model), the task store's update (Store, which *store.Store
// satisfies) and a function that tells a task's watchers it changed. It
// guarantees that a generated title never replaces one the user gave, and
// that a request's tokens and cost count as its task's.
package titles

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
	TitleRequests = 2
	TitleWaiting  = 32
	TitleTimeout  = 15 * time.Second
)

// Model titles a description; *llm.Client is one.
type Model interface {
	Title(ctx context.Context, description string) (string, llm.Usage, error)
	Cost(u llm.Usage) (float64, bool)
}

// Store updates a task; *store.Store is one.
type Store interface {
	UpdateTask(ctx context.Context, id string, u store.Update) (store.Task, []store.Event, error)
}

// Config configures a Titler; every field is required.
type Config struct {
	Store Store
	// Model returns the model that titles task t.
	Model func(ctx context.Context, t store.Task) (Model, error)
	// FromDescription reports whether titles come from descriptions alone.
	FromDescription func() bool
	// Notify tells a task's watchers that it changed.
	Notify func(taskID string)
	Log    *slog.Logger
}

// Titler makes title requests. It is safe for concurrent use.
type Titler struct {
	cfg  Config
	run  chan struct{} // a slot per request in flight
	wait chan struct{} // a ticket per request started or waiting

	// mu guards closed and the adds to wg.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// New returns a titler.
func New(cfg Config) (*Titler, error) {
	if cfg.Store == nil || cfg.Model == nil || cfg.FromDescription == nil || cfg.Notify == nil || cfg.Log == nil {
		return nil, errors.New("titles: Store, Model, FromDescription, Notify and Log are required")
	}
	return &Titler{cfg: cfg, run: make(chan struct{}, TitleRequests), wait: make(chan struct{}, TitleRequests+TitleWaiting)}, nil
}

// Later asks for a title for new task t, off the caller's way; the request
// ends with ctx. A task the user titled, or any when titles come from
// descriptions, gets no request; nor does one when TitleWaiting requests
// wait already, or once the titler is closed.
func (tl *Titler) Later(ctx context.Context, t store.Task) {
	if t.TitleEdited || tl.cfg.FromDescription() {
		return
	}
	select {
	case tl.wait <- struct{}{}:
	default:
		tl.cfg.Log.Warn("too many title requests: the task keeps the start of its description as its title", "task", t.ID)
		return
	}
	tl.mu.Lock()
	if tl.closed {
		tl.mu.Unlock()
		<-tl.wait
		return
	}
	tl.wg.Add(1)
	tl.mu.Unlock()
	go func() {
		defer tl.wg.Done()
		defer func() { <-tl.wait }()
		select {
		case tl.run <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-tl.run }()
		rctx, cancel := context.WithTimeout(ctx, TitleTimeout)
		defer cancel()
		if err := tl.generate(rctx, t); err != nil {
			tl.cfg.Log.Warn("no title from the model: the task keeps the start of its description", "task", t.ID, "err", err)
		}
	}()
}

// Close makes no more requests and waits for those under way (their
// context ending ends them).
func (tl *Titler) Close() {
	tl.mu.Lock()
	tl.closed = true
	tl.mu.Unlock()
	tl.wg.Wait()
}

// generate makes one title request and stores the answer unless the task
// was renamed meanwhile. Its tokens count as the task's.
func (tl *Titler) generate(ctx context.Context, t store.Task) error {
	m, err := tl.cfg.Model(ctx, t)
	if err != nil {
		return err
	}
	title, usage, err := m.Title(ctx, t.Description)
	cost, _ := m.Cost(usage)
	if err != nil && usage == (llm.Usage{}) {
		return err
	}
	_, _, uerr := tl.cfg.Store.UpdateTask(ctx, t.ID, store.Update{Mutate: func(t *store.Task) error {
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
	tl.cfg.Notify(t.ID)
	return err
}

// MaxUserTitle bounds a title the user gives, in bytes.
const MaxUserTitle = 500

// CheckUser checks a title the user gives: not empty, on one line, without
// control characters, at most MaxUserTitle bytes. It returns it cleaned.
func CheckUser(title string) (string, error) {
	clean := redact.OneLine(title)
	switch {
	case clean == "":
		return "", errdefs.Invalidf("title is required: the task's new name")
	case len(clean) > MaxUserTitle:
		return "", errdefs.Invalidf("title is %d bytes, over the limit of %d", len(clean), MaxUserTitle)
	}
	return clean, nil
}
