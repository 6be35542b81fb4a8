// Package orchestrator runs the task queue: a persistent FIFO of queued
// tasks dispatched to agents as the pool admits VMs, the user's hold on each
// running agent (pause, resume, instructions, takeover, answers, approvals,
// cancel), and the kill switch that stops every agent at once.
//
// The features that hang on the queue live in packages of their own,
// behind small interfaces, wired by the daemon: core/presets and
// core/scheduler make tasks through the queue's Check, Stage, Discard and
// Queued (and TaskConfig); core/writeback answers reviews of host-folder
// changes and tells watchers through NotifyChanged. What a run is given
// comes from core/continuation (the note of the task it continues),
// core/evalhooks (the harness's check command), core/vault (the
// credentials) and core/writeback (the host folders); core/titles titles
// new tasks. Subagents (subagents.go, hostrun.go) stay here: they are
// tasks of this queue, run and cancelled with their parent's run.
//
// Every state change is written to the store first (task row and activity
// event in one transaction) and then announced to watchers, so the API's
// event stream and the database never disagree. After a crash, Recover holds
// the tasks that were in flight for the user to resume from their saved
// conversations (restart.go); queued tasks stay queued and run.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/titles"
)

// Pool hands out VMs; *pool.Pool is one.
type Pool interface {
	Acquire(ctx context.Context, req pool.Request) (*pool.Lease, error)
}

// Config configures an Orchestrator. Store, Pool, Paths, Settings, APIKey
// and Log are required.
type Config struct {
	Store *store.Store
	Pool  Pool
	Paths config.Paths
	// Settings returns the current settings.
	Settings func() config.Settings
	// APIKey returns a provider's API key (empty when it has none).
	APIKey func(p store.Provider) (string, error)
	// Secret, if set, reads the secret store (credentials' secrets).
	Secret func(ref string) (string, error)
	// Provisioning, if set, is what VMs are given before their agent
	// starts.
	Provisioning *provision.Store
	Log          *slog.Logger
	// LLMBackoff is the first retry wait of LLM calls; default 1 s.
	LLMBackoff time.Duration
	// Now is the clock of retention; default time.Now.
	Now func() time.Time
	// Notify, if set, is told of ended tasks, questions, permission
	// requests and reviews (webhooks); it must not block.
	Notify func(Notice)
}

// Causes a run ends with besides the agent's own.
var (
	errUserCancel = errors.New("cancelled by the user")
	errKillSwitch = errors.New("stopped by the kill switch")
	errShutdown   = errors.New("interrupted: the helper stopped")
)

// Orchestrator owns the queue and the running agents. It is safe for
// concurrent use.
type Orchestrator struct {
	cfg Config
	hub *hub

	// mu guards runs, base and closed.
	mu     sync.Mutex
	runs   map[string]*run // active tasks: planning, acquiring a VM, running or paused
	base   context.Context // parent of every run; cancelled by Run's end
	closed bool

	kick chan struct{} // wakes the dispatcher; buffered 1
	wg   sync.WaitGroup

	// windows caches models' context windows (see contextWindow).
	windows windowCache
	// titles makes the title requests of new tasks (titles.go).
	titles *titles.Titler
	// rec writes the agents' events and step counts off their path
	// (events.go); Run's end closes it.
	rec *store.Recorder
}

// New returns an orchestrator; call Recover, then Run.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.Store == nil || cfg.Pool == nil || cfg.Paths.Home == "" || cfg.Settings == nil || cfg.APIKey == nil || cfg.Log == nil {
		return nil, errors.New("orchestrator: Store, Pool, Paths, Settings, APIKey and Log are required")
	}
	if cfg.LLMBackoff == 0 {
		cfg.LLMBackoff = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	o := &Orchestrator{cfg: cfg, hub: newHub(), runs: map[string]*run{}, kick: make(chan struct{}, 1)}
	var err error
	if o.titles, err = o.newTitler(); err != nil {
		return nil, err
	}
	o.rec = cfg.Store.NewRecorder(o.recorded)
	return o, nil
}

// Kick wakes the dispatcher (after a task is queued or a slot frees).
func (o *Orchestrator) Kick() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Recover settles what a previous helper left active (restart.go): a
// task running or held with a conversation to go on from is held for the
// user to resume or cancel; one that waited for its first VM is queued
// again; any other is marked failed with the reason "helper restarted". A
// task that was planning is queued to plan again; one whose plan waits
// for review keeps waiting (the plan is in the store), and so does one an
// older helper left paused for plan approval. Queued tasks stay queued. It
// returns how many tasks were active.
func (o *Orchestrator) Recover(ctx context.Context) (int, error) {
	tasks, err := o.cfg.Store.TasksInStatus(ctx, store.StatusWaitingForVM, store.StatusRunning, store.StatusPaused)
	if err != nil {
		return 0, err
	}
	if err := o.recoverHost(ctx); err != nil {
		return 0, err
	}
	for _, t := range tasks {
		if t.OnHost() {
			continue // ended by recoverHost
		}
		if legacyPlanReview(t) {
			if err := o.toPlanReview(ctx, t.ID); err != nil {
				return 0, err
			}
			continue
		}
		what, err := o.recoverTask(ctx, t)
		if err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return 0, err
		}
		o.cfg.Log.Warn("task interrupted by a helper restart", "task", t.ID, "now", what)
	}
	planning, err := o.cfg.Store.TasksInStatus(ctx, store.StatusPlanning)
	if err != nil {
		return 0, err
	}
	for _, t := range planning {
		if _, err := o.requeuePlanning(ctx, t.ID, "helper restarted while the plan was written"); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return 0, err
		}
		o.cfg.Log.Warn("task queued to plan again after a helper restart", "task", t.ID)
	}
	return len(tasks), nil
}

// legacyPlanReview reports whether t is a plan waiting for approval as
// helpers before the plan states recorded it: paused, with the reason,
// before any agent session.
func legacyPlanReview(t store.Task) bool {
	return t.Status == store.StatusPaused && t.PlanFirst && t.StatusReason == reasonPlanReview &&
		t.SessionID == "" && strings.TrimSpace(t.PlanMarkdown) != ""
}

// toPlanReview moves a legacy plan under review to planReview.
func (o *Orchestrator) toPlanReview(ctx context.Context, id string) error {
	_, _, err := o.cfg.Store.UpdateTask(ctx, id, store.Update{
		Mutate: func(t *store.Task) error {
			if !legacyPlanReview(*t) {
				return errdefs.Conflictf("task %s is %s", id, t.Status)
			}
			t.Status = store.StatusPlanReview
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusPlanReview, "Waiting for the user to approve the plan")},
	})
	if err != nil && !errors.Is(err, errdefs.ErrConflict) {
		return err
	}
	return nil
}

// Run dispatches queued tasks until ctx ends; then it
// stops every running agent (recording it as interrupted), waits for them to
// finish, and returns.
func (o *Orchestrator) Run(ctx context.Context) error {
	base, cancelAll := context.WithCancelCause(context.WithoutCancel(ctx))
	o.mu.Lock()
	o.base = base
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.closed = true
		o.mu.Unlock()
		cancelAll(errShutdown)
		o.wg.Wait()
		o.titles.Close()
		o.rec.Close()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		o.dispatch(ctx)
		timer.Reset(redispatchEvery)
		select {
		case <-ctx.Done():
			return nil
		case <-o.kick:
		case <-timer.C:
		}
	}
}

// redispatchEvery is the longest the dispatcher sleeps without looking at
// the queue (it is woken by Kick otherwise).
const redispatchEvery = time.Minute

// dispatch starts queued tasks, oldest first, while slots are free. A task
// holds its slot from VM acquisition to its end, paused included, except
// while the VM of a held task is released (vmhold.go). Writing
// a plan takes no slot (it needs no VM): up to maxPlanning plans are
// written at once, whatever the slots; so do research subagents, up to
// maxHostRuns (hostrun.go).
func (o *Orchestrator) dispatch(ctx context.Context) {
	limit := o.cfg.Settings().MaxConcurrentVMs
	o.mu.Lock()
	free, planFree, hostFree := limit, maxPlanning, maxHostRuns
	for _, r := range o.runs {
		switch {
		case r.planning:
			planFree--
		case r.host:
			hostFree--
		case r.holdsSlot():
			free--
		}
	}
	closed := o.closed || o.base == nil
	o.mu.Unlock()
	if closed {
		return
	}
	queued, err := o.cfg.Store.TasksInStatus(ctx, store.StatusQueued)
	if err != nil {
		o.cfg.Log.Error("read the queue", "err", err)
		return
	}
	full := ""
	for _, t := range queued {
		if needsPlan(t) {
			if planFree > 0 && o.start(t) {
				planFree--
			}
			continue
		}
		if t.OnHost() {
			// A research subagent needs no VM slot (hostrun.go).
			if hostFree > 0 && o.start(t) {
				hostFree--
			} else if hostFree <= 0 && t.StatusReason != hostsBusy() {
				o.noteQueued(t.ID, hostsBusy())
			}
			continue
		}
		if free > 0 && o.start(t) {
			free--
			continue
		}
		// No slot: the task says why it waits.
		if full == "" {
			full = fmt.Sprintf("waiting for a free agent slot: %d of %d in use (Settings: maxConcurrentVMs)", limit-free, limit)
			if n := o.pausedHolding(); n > 0 {
				full += fmt.Sprintf(", %d held by paused tasks: resume or cancel them to free their VMs", n)
			}
		}
		if t.StatusReason != full {
			o.noteQueued(t.ID, full)
		}
	}
}

// noteQueued records why a queued task waits (no event: it is not a change
// of status, and the dispatcher says it again as it changes).
func (o *Orchestrator) noteQueued(id, reason string) {
	_, err := o.update(id, store.Update{Mutate: func(t *store.Task) error {
		if t.Status != store.StatusQueued {
			return errdefs.Conflictf("task %s is %s", id, t.Status)
		}
		t.StatusReason = reason
		return nil
	}})
	if err != nil && !errors.Is(err, errdefs.ErrConflict) {
		o.cfg.Log.Error("record why a task waits", "task", id, "err", err)
	}
}

// activeRun returns a task's run, if it is active.
func (o *Orchestrator) activeRun(id string) (*run, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.runs[id]
	return r, ok
}

// Active returns the IDs of the active tasks.
func (o *Orchestrator) Active() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.runs))
	for id := range o.runs {
		out = append(out, id)
	}
	return out
}

// NotifyChanged tells a task's watchers that it changed outside the
// orchestrator (core/writeback: a review of its host folders).
func (o *Orchestrator) NotifyChanged(taskID string) { o.hub.notify(taskID) }

// Watch returns a channel closed at the task's next change (event or
// pending question/permission). Take it before reading the state it guards.
func (o *Orchestrator) Watch(taskID string) <-chan struct{} { return o.hub.watch(taskID) }

// StopAll is the kill switch: every active task (planning, waiting for a
// VM, running or paused) is cancelled and its VM destroyed, and queued
// tasks and plans under review are cancelled so that nothing starts in
// their place. It returns the stopped
// tasks once all of them have ended, or when ctx ends.
func (o *Orchestrator) StopAll(ctx context.Context) ([]string, error) {
	o.mu.Lock()
	runs := make([]*run, 0, len(o.runs))
	for _, r := range o.runs {
		runs = append(runs, r)
	}
	o.mu.Unlock()
	var stopped []string
	for _, r := range runs {
		r.stop(errKillSwitch)
		stopped = append(stopped, r.id)
	}
	queued, err := o.cfg.Store.TasksInStatus(ctx, store.StatusQueued, store.StatusPlanReview)
	if err != nil {
		return stopped, err
	}
	for _, t := range queued {
		status := t.Status
		if r, ok := o.activeRun(t.ID); ok {
			r.stop(errKillSwitch)
			runs = append(runs, r)
			stopped = append(stopped, t.ID)
			continue
		}
		_, err := o.finishTask(ctx, t.ID, outcome{status: store.StatusCancelled, summary: "Stopped by the kill switch before it started.",
			only: func(t *store.Task) error {
				if t.Status != status {
					return errdefs.Conflictf("task %s is %s, no longer %s", t.ID, t.Status, status)
				}
				return nil
			}}, nil)
		if err == nil {
			stopped = append(stopped, t.ID)
		} else if !errors.Is(err, errdefs.ErrConflict) {
			return stopped, err
		}
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return stopped, fmt.Errorf("stop all: %d agents still stopping: %w", len(runs), ctx.Err())
		}
	}
	o.cfg.Log.Warn("kill switch: every agent stopped", "tasks", len(stopped))
	return stopped, nil
}
