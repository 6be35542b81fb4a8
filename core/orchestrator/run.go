package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/writeback"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// run is one active task: from claiming it off the queue to its end.
type run struct {
	id     string
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the task has its terminal status and its VM is gone
	// planning marks a run that only writes the task's plan: it holds no
	// VM and no VM slot, and ends when the plan waits for review.
	planning bool
	// host marks a research subagent's run (hostrun.go): it holds no VM
	// and no VM slot, ever.
	host bool

	// mu guards everything below.
	mu        sync.Mutex
	runner    *agent.Runner
	lease     *pool.Lease
	sessionID string
	saved     map[string]bool // questions and permission requests already in the store
	// req is how the run's VM was asked for (a fresh one is asked the same
	// way); shared is the first VM's shared folder; vmCtx ends when the
	// agent does; swapped is closed and replaced whenever lease changes.
	req     pool.Request
	shared  string
	vmCtx   context.Context
	swapped chan struct{}
	// vmMu is held while the run's VM is released or replaced, and once
	// the run ends (vmhold.go).
	vmMu sync.Mutex
	// resuming is set while a resume waits for a fresh VM, fresh once it
	// has a slot for it; hello is the first VM's hello, for the agent
	// while it has none (guarded by mu).
	resuming, fresh bool
	hello           protocol.HelloResult
	// plan is what the run's VMs are given before the agent works in them
	// (a fresh one's files are staged again).
	plan provision.Plan

	// hookStop ends the task's hook command under way, and hooksStopped
	// says a cancel came after the agent ended (hooks.go; guarded by mu).
	hookStop     context.CancelFunc
	hooksStopped bool

	// live is the model's answer streaming in the current step.
	live liveAnswer
}

// stop ends the run with cause: the agent is interrupted wherever it is.
func (r *run) stop(cause error) { r.cancel(cause) }

func (r *run) get() (*agent.Runner, *pool.Lease, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runner, r.lease, r.sessionID
}

// sharedDir is the shared folder of the run's VM now ("" while it has
// none): a held task may have moved to a fresh VM (vmhold.go).
func (r *run) sharedDir() string {
	if _, l, _ := r.get(); l != nil {
		return l.Machine().Spec().SharedDir()
	}
	return ""
}

// firstSave reports whether key is saved for the first time.
func (r *run) firstSave(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved[key] {
		return false
	}
	r.saved[key] = true
	return true
}

// outcome is how a task ends.
type outcome struct {
	status  store.TaskStatus
	summary string
	success *bool
	steps   int
	usage   llm.Usage
	cost    float64
	files   []store.TaskFile
	events  []store.Event
	// writeback are the agent's changes to the task's host folders.
	writeback []store.WritebackItem
	// only, if set, refuses to end a task it returns an error for (one
	// that has left the queue, say).
	only func(*store.Task) error
	// held: the task does not end; it is held for the user to resume
	// (the helper stopped under it: restart.go).
	held bool
}

// onlyQueued refuses to end a task that has left the queue.
func onlyQueued(t *store.Task) error {
	if t.Status != store.StatusQueued {
		return errdefs.Conflictf("task %s is %s, no longer queued", t.ID, t.Status)
	}
	return nil
}

// background is the context of writes that must happen even when the run
// was cancelled: recording how it ended.
func background() context.Context { return context.Background() }

// start claims a queued task and runs it, or writes its plan when it is a
// plan-first task without one; it reports whether a run began.
func (o *Orchestrator) start(t store.Task) bool {
	o.mu.Lock()
	if o.closed || o.base == nil {
		o.mu.Unlock()
		return false
	}
	if _, ok := o.runs[t.ID]; ok {
		o.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancelCause(o.base)
	r := &run{id: t.ID, ctx: ctx, cancel: cancel, done: make(chan struct{}), planning: needsPlan(t), host: t.OnHost(), saved: map[string]bool{}}
	o.runs[t.ID] = r
	o.wg.Add(1)
	o.mu.Unlock()
	if r.planning {
		go o.planTask(r)
	} else {
		go o.execute(r)
	}
	return true
}

// endRun forgets a run that has ended and wakes the dispatcher.
func (o *Orchestrator) endRun(r *run) {
	r.cancel(nil)
	o.mu.Lock()
	delete(o.runs, r.id)
	o.mu.Unlock()
	close(r.done)
	o.Kick()
	o.wg.Done()
}

func (o *Orchestrator) execute(r *run) {
	defer o.endRun(r)
	log := o.cfg.Log.With("task", r.id)
	var resume *store.TaskResume
	reason, said := "preparing a VM", "Preparing a VM"
	if r.host {
		reason, said = "starting on the host (no VM)", "Starting on the host: a research subagent takes no VM"
	}
	t, err := o.update(r.id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusQueued || needsPlan(*t) {
				return errdefs.Conflictf("task %s is %s, not queued to run", t.ID, t.Status)
			}
			t.Status, t.StatusReason = store.StatusWaitingForVM, reason
			resume, t.Resume = t.Resume, nil
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusWaitingForVM, said)},
	})
	if err != nil {
		if !errors.Is(err, errdefs.ErrConflict) && !errors.Is(err, errdefs.ErrNotFound) {
			log.Error("claim task", "err", err)
		}
		return
	}
	t.Resume = resume
	var out outcome
	if r.host {
		out = o.workHost(r, t)
	} else {
		out = o.work(r, t)
	}
	if out.held {
		if err := o.holdStopped(r.id, out.summary); err != nil {
			log.Error("hold the task the helper stops under", "err", err)
		}
		log.Info("task held: the helper stops", "kept", out.summary)
		return
	}
	if out.status == store.StatusFailed && r.ctx.Err() != nil {
		// A step that failed because the run was stopped (a cancel just
		// after the VM was leased fails the input copy with "context
		// canceled") ends as the stop says, not as that step's failure.
		if stop := stopped(r.ctx, nil); stop.status != store.StatusFailed {
			out.status, out.summary = stop.status, stop.summary
		}
	}
	if err := o.recordEnd(r.id, out); err != nil {
		log.Error("record the end of the task", "err", err)
	}
	log.Info("task ended", "status", out.status, "summary", out.summary)
}

// recordEndFor bounds how long a run's end waits for a store that another
// process keeps locked (each attempt waits out the store's busy timeout).
const recordEndFor = 2 * time.Minute

// recordEnd writes a run's end. A task whose end is not written would stay
// running (or waiting) with no agent behind it until the next restart, so a
// locked store is waited out rather than given up on.
func (o *Orchestrator) recordEnd(id string, out outcome) error {
	deadline := time.Now().Add(recordEndFor)
	for {
		_, err := o.finishTask(background(), id, out, nil)
		if err == nil || !errors.Is(err, errdefs.ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runClient is the client of a run's model. A provider that makes the
// agent wait says so in the activity (a 429 with Retry-After 120 is two
// minutes of silence otherwise).
func (o *Orchestrator) runClient(ctx context.Context, r *run, t store.Task, settings config.Settings) (*llm.Client, error) {
	client, err := o.llmFor(ctx, t, settings)
	if err != nil {
		return nil, err
	}
	client.SetOnRetry(func(attempt int, wait time.Duration, err error) {
		at := time.Now().Add(wait).Local().Format("15:04:05")
		o.emitInfo(r, fmt.Sprintf("LLM: %s; asking again at %s, in %s (attempt %d of %d)", err, at, wait.Round(100*time.Millisecond), attempt+1, client.MaxAttempts()))
	})
	return client, nil
}

// How long a run's VM may take to stop, and its outputs to be collected:
// after the agent finished, and after the run was stopped (the kill switch
// must win within seconds whatever the guest does).
const (
	finishedStop    = 5 * time.Second
	finishedCollect = 10 * time.Minute
	stoppedStop     = time.Second
	stoppedCollect  = 2 * time.Second
)

// vmLostGrace is how long a run whose guest went away waits for the pool
// to say whether the VM failed.
const vmLostGrace = 2 * time.Second

// vmLost is the cause of a run whose VM failed.
type vmLost struct{ reason string }

func (e vmLost) Error() string { return "the VM failed: " + e.reason }

// stopped says how a run that was stopped from outside ended, by its cause.
func stopped(ctx context.Context, base *outcome) outcome {
	out := outcome{}
	if base != nil {
		out = *base
	}
	cause := context.Cause(ctx)
	var lost vmLost
	switch {
	case errors.As(cause, &lost):
		out.status, out.summary = store.StatusFailed, "The VM failed: "+lost.reason
	case errors.Is(cause, errShutdown):
		out.status, out.summary = store.StatusFailed, "Interrupted: the helper was stopped."
	case errors.Is(cause, errKillSwitch):
		out.status, out.summary = store.StatusCancelled, "Stopped by the kill switch."
	case errors.Is(cause, errUserCancel), cause == nil:
		out.status, out.summary = store.StatusCancelled, or(out.summary, "Cancelled by the user.")
	default:
		out.status, out.summary = store.StatusCancelled, "Stopped: "+cause.Error()
	}
	return out
}

func failed(summary string) outcome {
	return outcome{status: store.StatusFailed, summary: summary}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func minutes(n, def int) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Minute
}

func toPolicy(m map[string]string) config.ToolPolicy {
	p := make(config.ToolPolicy, len(m))
	for k, v := range m {
		p[k] = config.Permission(v)
	}
	return p
}

func statusEvent(s store.TaskStatus, summary string) store.Event {
	return store.Event{Type: "status_change", ActivityType: "info", Status: string(s), Summary: summary}
}

// update writes a change to a task and tells its watchers.
func (o *Orchestrator) update(id string, u store.Update) (store.Task, error) {
	o.rec.Flush(id)
	t, _, err := o.cfg.Store.UpdateTask(background(), id, u)
	if err == nil {
		o.hub.notify(id)
	}
	return t, err
}

// setWaiting records why a task waits for a VM.
func (o *Orchestrator) setWaiting(id, reason string) {
	if n := o.pausedHolding(); n > 0 {
		reason += fmt.Sprintf(" (%d held by paused tasks: resume or cancel them to free their VMs)", n)
	}
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusWaitingForVM {
				return errdefs.Conflictf("task %s is %s", id, t.Status)
			}
			t.StatusReason = reason
			return nil
		},
		Events: []store.Event{{Type: "status_change", ActivityType: "info", Status: string(store.StatusWaitingForVM), Summary: "Waiting for a VM: " + reason}},
	})
	if err != nil && !errors.Is(err, errdefs.ErrConflict) {
		o.cfg.Log.Error("record wait", "task", id, "err", err)
	}
}

// pausedHolding counts the paused tasks that hold a VM.
func (o *Orchestrator) pausedHolding() int {
	o.mu.Lock()
	runs := make([]*run, 0, len(o.runs))
	for _, r := range o.runs {
		runs = append(runs, r)
	}
	o.mu.Unlock()
	n := 0
	for _, r := range runs {
		if runner, lease, _ := r.get(); runner != nil && lease != nil {
			if st, _ := runner.Status(); st == store.StatusPaused {
				n++
			}
		}
	}
	return n
}

// finishTask gives a task its terminal status, its result, its output files
// and its last event, in one transaction.
func (o *Orchestrator) finishTask(ctx context.Context, id string, out outcome, mutate func(*store.Task)) (store.Task, error) {
	now := time.Now().UTC()
	success := out.success
	if success == nil {
		ok := out.status == store.StatusCompleted
		success = &ok
	}
	// The summary is the model's words (and file names a guest chose):
	// stored with line breaks but no control character left to act.
	summary := files.PrintableText(out.summary)
	activity := "info"
	if out.status != store.StatusCompleted {
		activity = "error"
	}
	ev := store.Event{Type: "status_change", ActivityType: activity, Status: string(out.status), Summary: summary}
	o.rec.Flush(id) // the agent's last events come before its end
	t, _, err := o.cfg.Store.UpdateTask(ctx, id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status.Terminal() {
				return errdefs.Conflictf("task %s has already ended (%s)", id, t.Status)
			}
			if out.only != nil {
				if err := out.only(t); err != nil {
					return err
				}
			}
			t.Status, t.StatusReason = out.status, ""
			if pending := writeback.Pending(out.writeback); pending > 0 {
				if out.status == store.StatusCancelled {
					// As Swift: a cancelled task's changes are not offered.
					for i := range out.writeback {
						if out.writeback[i].State == store.WritebackPending {
							out.writeback[i].State = store.WritebackDiscarded
						}
					}
					summary = strings.TrimSpace(summary + fmt.Sprintf("\n\nIts %d change(s) to the host folders were discarded.", pending))
				} else {
					t.Status, t.EndStatus = store.StatusWritebackReview, out.status
				}
			}
			t.CompletedAt, t.ResultSummary, t.WasSuccessful = &now, &summary, success
			if out.steps > 0 {
				t.StepCount = out.steps
			}
			if out.usage.Prompt > 0 || out.usage.Completion > 0 {
				t.PromptTokens, t.CompletionTokens, t.CostUSD = int64(out.usage.Prompt)+t.TitlePromptTokens, int64(out.usage.Completion)+t.TitleCompletionTokens, out.cost+t.TitleCostUSD
			}
			if mutate != nil {
				mutate(t)
			}
			return nil
		},
		Files:     out.files,
		Events:    append(out.events, ev),
		Writeback: out.writeback,
	})
	if err == nil {
		o.hub.notify(id)
		o.noticeEnd(t)
	}
	return t, err
}
