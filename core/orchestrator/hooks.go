package orchestrator

import (
	"context"
	"errors"
	"os"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// A task's hooks (core/evalhooks) are the evaluation harness's: the
// orchestrator reads and writes them in the task's folder, runs the check
// command at the end of a run (checkVM) and ends it with the run.

// readHooks reads a task's hooks; a task without any has none.
func (o *Orchestrator) readHooks(taskID string) (evalhooks.Hooks, error) {
	return evalhooks.Read(o.taskDir(taskID))
}

// writeHooks stores a queued task's hooks in its folder.
func (o *Orchestrator) writeHooks(taskID string, h evalhooks.Hooks) error {
	return evalhooks.Write(o.taskDir(taskID), h)
}

// checkVM runs a task's check command after its agent stopped, records
// the result in its session and says so in the outcome's events. A
// cancel or the kill switch ends it at once (the task keeps the agent's
// outcome; the result says the check was stopped).
func (o *Orchestrator) checkVM(r *run, h evalhooks.Hooks, lease *pool.Lease, sessionDir string, out *outcome) {
	if h.Check == "" || lease == nil || r.ctx.Err() != nil || !lease.Guest().Healthy() {
		return
	}
	ctx, stop := r.hookContext()
	defer stop()
	res := evalhooks.Run(ctx, lease.Guest(), h.Check)
	if ctx.Err() != nil {
		res.ExitCode, res.Error = -1, "stopped before it ended: the task was cancelled or the kill switch was used"
	}
	if err := evalhooks.Save(sessionDir, res); err != nil {
		res.Error = "could not record the result: " + err.Error()
	}
	out.events = append(out.events, store.Event{Type: "status_change", ActivityType: "info", Summary: evalhooks.Summary(res)})
}

// hookContext is the context of a hook command: it ends with the run, or
// when stopHooks is called (before or while it runs).
func (r *run) hookContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hooksStopped {
		cancel()
	}
	r.hookStop = cancel
	return ctx, cancel
}

// stopHooks ends the run's hook command under way, and any it would
// start: a cancel of a task whose agent has ended.
func (r *run) stopHooks() {
	r.mu.Lock()
	r.hooksStopped = true
	stop := r.hookStop
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// CheckResult returns the result of a task's check command; a task whose
// check has not run is not found.
func (o *Orchestrator) CheckResult(ctx context.Context, id string) (wire.CheckResult, error) {
	t, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return wire.CheckResult{}, err
	}
	if t.SessionID == "" {
		return wire.CheckResult{}, errdefs.NotFoundf("task %s has no check result: it has not run", id)
	}
	res, err := evalhooks.Load(o.cfg.Paths.Session(t.SessionID))
	if errors.Is(err, os.ErrNotExist) {
		return res, errdefs.NotFoundf("task %s has no check result (no checkCommand, or its VM was gone when the agent stopped)", id)
	}
	return res, err
}
