package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
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

// work runs a claimed task and returns how it ended. The VM is destroyed
// before it returns.
func (o *Orchestrator) work(r *run, t store.Task) outcome {
	ctx := r.ctx
	settings := o.cfg.Settings()
	client, err := o.runClient(ctx, r, t, settings)
	if err != nil {
		return failed(err.Error())
	}
	tmpl, err := o.template(ctx, t.TemplateID, settings)
	if err != nil {
		return failed(err.Error())
	}
	description := t.Description
	todo := t.Todo
	if t.PlanFirst {
		// The claim took only a task whose plan the user approved; its
		// items are the checklist the agent starts with.
		description += "\n\nFollow this plan, which the user approved:\n" + t.PlanMarkdown
		if len(todo) == 0 {
			todo = planItems(t.PlanMarkdown)
		}
	}
	network := vm.NetworkMode(or(t.NetworkMode, string(settings.NetworkMode)))
	r.req = pool.Request{
		TaskID: t.ID, Template: vm.Template{ID: tmpl.ID, Kind: vm.TemplateKind(tmpl.Kind), Path: tmpl.Path},
		Network: network, CPUs: tmpl.CPUCount, MemoryMB: tmpl.MemoryMB, AllowHosts: t.AllowHosts,
		OnWait: func(reason string) { o.setWaiting(t.ID, reason) },
	}
	lease, err := o.cfg.Pool.Acquire(ctx, r.req)
	if err != nil {
		if ctx.Err() != nil {
			return stopped(ctx, nil)
		}
		return failed("No VM for this task: " + err.Error())
	}
	// The run's VM may change (a held task's is released, and a fresh one
	// leased on resume: vmhold.go); whichever it has at the end is released.
	r.mu.Lock()
	r.lease = lease
	r.mu.Unlock()
	defer func() {
		if _, l, _ := r.get(); l != nil {
			if err := l.Release(background()); err != nil {
				o.cfg.Log.Error("release VM", "task", t.ID, "vm", l.ID(), "err", err)
			}
		}
	}()

	// A resumed task goes on in its session (restart.go); any other
	// starts one.
	sid := uuid.NewString()
	if t.Resume != nil {
		sid = t.Resume.SessionID
	}
	tw, err := trace.Create(o.cfg.Paths.Session(sid))
	if err != nil {
		return failed(err.Error())
	}
	defer tw.Close()
	sess := store.AgentSession{ID: sid, TaskID: t.ID, TracePath: filepath.Join("Sessions", sid)}
	if t.Resume == nil {
		if err := o.cfg.Store.CreateSession(background(), &sess); err != nil {
			return failed(err.Error())
		}
	}
	shared := lease.Machine().Spec().SharedDir()
	var resume *agent.Resume
	if t.Resume != nil {
		kept, err := files.CarryIn(filepath.Join(carriedDir(tw.Dir()), files.Outbox), shared)
		if err == nil {
			resume, err = o.resumeFrom(t, kept)
		}
		if err != nil {
			return failed("Could not resume the task: " + err.Error())
		}
	}
	if err := o.copyInputs(ctx, t.ID, shared); err != nil {
		return failed("Could not give the input files to the VM: " + err.Error())
	}
	if t.Resume != nil && hasCarriedFolders(tw.Dir()) {
		err = carryFolders(carriedDir(tw.Dir()), shared)
	} else {
		err = o.stageFolders(ctx, t, shared, tw.Dir())
	}
	if err != nil {
		return failed("Could not give the host folders to the VM: " + err.Error())
	}
	h, err := o.readHooks(t.ID)
	if err != nil {
		return failed(err.Error())
	}
	plan, err := o.provisionPlan(t, tmpl, h.Setup)
	if err == nil {
		err = provision.Stage(plan, shared)
	}
	if err != nil {
		return failed("Could not provision the VM: " + err.Error())
	}

	timeout := minutes(t.TimeoutMinutes, settings.DefaultTimeoutMinutes)
	maxIter := t.MaxIterations
	if maxIter == 0 {
		maxIter = settings.DefaultMaxIterations
	}
	policy := settings.ToolPolicy.Merge(toPolicy(t.ToolPolicy))
	budgetUSD, budgetTokens := budgetOf(t, settings)
	window, noVision := o.modelFacts(ctx, t.ProviderName, client)
	vlt, err := o.vaultFor(ctx)
	if err != nil {
		return failed("Could not read the stored credentials: " + err.Error())
	}
	x := o.extrasFor(ctx, r, t, network, settings)
	defer x.close()
	if kids, ok := x.children.(*children); ok {
		defer kids.cancelAll() // however the parent ends, its children end
	}
	runner, err := agent.New(agent.Config{
		Task: agent.Task{ID: t.ID, Description: description, Network: config.NetworkMode(network), Policy: policy,
			Timeout: timeout, MaxIterations: maxIter, ShotW: settings.ScreenshotMaxWidth, ShotH: settings.ScreenshotMaxHeight,
			ContextTokens: window, BudgetUSD: budgetUSD, BudgetTokens: budgetTokens, Todo: todo,
			MaxFailedChecks: settings.CompletionCheckTries,
			TextOnly:        noVision || slices.Contains(settings.TextOnlyModels, t.ModelID),
			LimitGrace:      fractionMinutes(settings.LimitGraceMinutes)},
		LLM: client, Condenser: o.condenser(ctx, r, t, settings), Guest: runGuest{r: r}, Trace: tw, Log: o.cfg.Log.With("task", t.ID), Vault: vlt,
		HostTools: x.tools, Prompt: append(x.prompt, foldersPrompt(t)...), Context: joinContext(t.ContextNote, x.context), Children: x.children,
		Emit:      o.emitter(r, sid, client),
		Live:      func(d agent.Live) { r.live.add(d, func() { o.hub.notify(r.id) }) },
		Changed:   o.changed(r),
		Provision: plan,
		Resume:    resume,
		Todo:      func(list []store.TodoItem) { o.saveTodo(t.ID, list) },
	})
	if err != nil {
		return failed(err.Error())
	}
	r.mu.Lock()
	r.runner, r.sessionID, r.shared, r.plan = runner, sid, shared, plan
	r.mu.Unlock()
	o.attach(r, lease, runner)
	now := time.Now().UTC()
	if _, err := o.update(t.ID, store.Update{
		Mutate: func(t *store.Task) error {
			t.Status, t.StatusReason, t.StartedAt, t.VMID, t.SessionID = store.StatusRunning, "", &now, lease.ID(), sid
			t.Todo = todo
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusRunning, "Agent started in VM "+lease.ID())},
	}); err != nil {
		return failed(err.Error())
	}

	// A VM that fails ends the run; a held task's VM may be released
	// meanwhile, and a fresh one leased on resume (vmhold.go).
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	vmCtx, endVM := context.WithCancel(runCtx) // VM swaps end with the agent
	r.mu.Lock()
	r.vmCtx = vmCtx
	r.mu.Unlock()
	go o.watchVM(vmCtx, r, cancelRun)
	go o.releaseWhenHeld(vmCtx, r, t, tw.Dir())
	res := runner.Run(runCtx)
	out := outcome{status: res.Status, summary: res.Summary, success: res.Success, steps: res.Steps, usage: res.Usage, cost: res.CostUSD}
	endVM()
	if _, cerr := agent.LoadConversation(tw.Dir()); errors.Is(context.Cause(runCtx), errShutdown) && cerr == nil {
		// The helper stops under an agent that has a conversation to go
		// on from: its outbox is kept for the fresh VM of its resume,
		// and it is held (restart.go), not ended.
		n, _, err := o.releaseVMWithin(background(), r, t, tw.Dir(), 0, stoppedCollect)
		if err != nil {
			o.cfg.Log.Error("keep the outbox of a task held by the helper's stop", "task", t.ID, "err", err)
		}
		return outcome{held: true, steps: res.Steps, summary: fmt.Sprintf("%d outbox file(s) kept", n)}
	}
	r.vmMu.Lock() // no release or fresh VM from here on
	defer r.vmMu.Unlock()
	_, lease, _ = r.get()
	if lease != nil && res.Status == store.StatusFailed && !lease.Guest().Healthy() {
		// The agent may see the guest go before the pool says why: a VM
		// that failed is the reason, not the agent's failed call.
		select {
		case <-lease.Lost():
			out.status, out.summary = store.StatusFailed, "The VM failed: "+lease.LostReason()
		case <-time.After(vmLostGrace):
		}
	}
	if res.Status == store.StatusCancelled {
		out = stopped(runCtx, &out)
	}
	sess.StepCount, sess.PromptTokens, sess.CompletionTokens, sess.CostUSD = res.Steps, int64(res.Usage.Prompt), int64(res.Usage.Completion), res.CostUSD
	if err := o.cfg.Store.EndSession(background(), sess); err != nil {
		o.cfg.Log.Error("end session", "task", t.ID, "err", err)
	}
	if out.status != store.StatusCancelled && runCtx.Err() == nil {
		// Before the VM stops, and before a stop's short deadlines are
		// chosen: the kill switch still cancels the check (ctx).
		o.checkVM(r, h, lease, tw.Dir(), &out)
	}
	// The outbox is read from a stopped VM: nothing in the guest can swap
	// a FIFO or a link in under the collection, or hold it up. A stopped
	// run (cancel, stop-all, helper stop) stops its VM at once and has a
	// short deadline for what it collects; a finished one, a long one.
	stopWithin, collectWithin := finishedStop, finishedCollect
	if ctx.Err() != nil || runCtx.Err() != nil {
		stopWithin, collectWithin = stoppedStop, stoppedCollect
	}
	if lease == nil {
		// The VM was released while the task was held: the outbox it had
		// then was kept.
		cctx, cancel := context.WithTimeout(background(), collectWithin)
		o.collect(cctx, t, tw.Dir(), carriedDir(tw.Dir()), settings, &out)
		cancel()
		return out
	}
	shared = lease.Machine().Spec().SharedDir()
	lease.OnNotify(nil)
	lease.OnGuestReach(nil)
	collected := false
	err = lease.ReleaseAfter(stopWithin, func(vm.Machine) error {
		collected = true
		cctx, cancel := context.WithTimeout(background(), collectWithin)
		defer cancel()
		o.collect(cctx, t, tw.Dir(), shared, settings, &out)
		return nil
	})
	if err != nil {
		o.cfg.Log.Error("stop VM before collecting outputs", "task", t.ID, "vm", lease.ID(), "err", err)
	}
	if !collected {
		// The pool let go of the VM already (it failed and is stopped): its
		// outbox, if still there, cannot change.
		cctx, cancel := context.WithTimeout(background(), collectWithin)
		o.collect(cctx, t, tw.Dir(), shared, settings, &out)
		cancel()
	}
	return out
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
			if pending := pendingWriteback(out.writeback); pending > 0 {
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

func pendingWriteback(items []store.WritebackItem) int {
	n := 0
	for _, it := range items {
		if it.State == store.WritebackPending {
			n++
		}
	}
	return n
}

// emitter turns the agent's events into stored activity events. The agent's
// terminal status is left out: finishTask writes it once the outputs are in.
func (o *Orchestrator) emitter(r *run, sid string, client *llm.Client) func(agent.Event) {
	return func(e agent.Event) {
		if e.Type == "status_change" && e.Status.Terminal() {
			return
		}
		ev := store.Event{Type: e.Type, Summary: e.Summary, ActivityType: e.ActivityType, Details: e.Details,
			Reasoning: e.Reasoning, Status: string(e.Status), Point: e.Point, SubagentID: e.Subagent}
		if e.Screenshot != "" {
			ev.ScreenshotPath = filepath.ToSlash(filepath.Join("Sessions", sid, e.Screenshot))
		}
		u := store.Update{Events: []store.Event{ev}}
		runner, _, _ := r.get()
		switch {
		case e.Type == "status_change" && runner != nil:
			status, reason := runner.Status()
			u.Mutate = func(t *store.Task) error {
				if t.Status.Terminal() {
					return errdefs.Conflictf("task %s has ended", t.ID)
				}
				t.Status, t.StatusReason = status, reason
				return nil
			}
		case e.Type == "llm_response" && runner != nil:
			r.live.clear()
			steps, usage := runner.Steps(), runner.Usage()
			cost, _ := client.Cost(usage)
			u.Mutate = func(t *store.Task) error {
				t.StepCount, t.PromptTokens, t.CompletionTokens = steps, int64(usage.Prompt)+t.TitlePromptTokens, int64(usage.Completion)+t.TitleCompletionTokens
				t.CostUSD = cost + t.TitleCostUSD
				return nil
			}
		}
		var err error
		if u.Mutate == nil {
			// Most events leave the task's row alone: append them only.
			if _, err = o.cfg.Store.AppendEvents(background(), r.id, ev); err == nil {
				o.hub.notify(r.id)
			}
		} else {
			_, err = o.update(r.id, u)
		}
		if err != nil && !errors.Is(err, errdefs.ErrConflict) {
			o.cfg.Log.Error("record event", "task", r.id, "type", e.Type, "err", err)
		}
	}
}

// changed persists new questions and permission requests and tells watchers.
func (o *Orchestrator) changed(r *run) func() {
	return func() {
		runner, _, _ := r.get()
		if runner != nil {
			q, p := runner.Pending()
			if q != nil && r.firstSave("q"+q.ID) {
				kind := "text"
				if len(q.Options) > 0 {
					kind = "multipleChoice"
				}
				sq := store.Question{ID: q.ID, TaskID: r.id, Kind: kind, Question: q.Text, Options: q.Options, CreatedAt: q.Created}
				if err := o.cfg.Store.SaveQuestion(background(), sq); err != nil {
					o.cfg.Log.Error("save question", "task", r.id, "err", err)
				} else {
					defer o.noticeAsk(r.id, &sq, nil)
				}
			}
			if p != nil && r.firstSave("p"+p.ID) {
				sp := store.PermissionRequest{ID: p.ID, TaskID: r.id, ToolName: p.Tool, Details: p.Details, CreatedAt: p.Created}
				if err := o.cfg.Store.SavePermission(background(), sp); err != nil {
					o.cfg.Log.Error("save permission request", "task", r.id, "err", err)
				} else {
					defer o.noticeAsk(r.id, nil, &sp)
				}
			}
		}
		o.hub.notify(r.id)
	}
}

// outputLimits are the outbox caps of the settings (the package defaults
// where a setting is unset).
func outputLimits(s config.Settings) files.Limits {
	return files.Limits{MaxFileBytes: int64(s.MaxOutputFileMB) << 20, MaxTaskBytes: int64(s.MaxOutputTaskMB) << 20}
}

// copyInputs puts the task's input files into the VM's inbox.
func (o *Orchestrator) copyInputs(ctx context.Context, taskID, shared string) error {
	tf, err := o.cfg.Store.TaskFiles(ctx, taskID, store.FileInput)
	if err != nil {
		return err
	}
	ins := make([]files.Input, len(tf))
	for i, f := range tf {
		ins[i] = files.Input{Name: f.Name, Path: filepath.Join(o.cfg.Paths.Home, f.Path)}
	}
	return files.CopyIn(shared, ins)
}

// collect copies the outbox into the session's artifacts and the output
// directory, and adds the output files and any problems to out. Without
// the task's own output folder, its files go into a new folder of their
// own in the default one, named from the title and the time.
func (o *Orchestrator) collect(ctx context.Context, t store.Task, sessionDir, shared string, settings config.Settings, out *outcome) {
	o.reviewFolders(ctx, t, sessionDir, shared, out)
	artifacts := filepath.Join(sessionDir, trace.ArtifactsDir)
	col, err := files.Collect(ctx, filepath.Join(shared, files.Outbox), artifacts, outputLimits(settings))
	if err != nil {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error", Summary: "Could not collect the whole outbox: " + err.Error()})
	}
	got := col.Collected
	var overCap, listed []string
	for _, s := range col.Skipped {
		listed = append(listed, s.Name+" ("+s.Reason+")")
		if s.TooLarge {
			overCap = append(overCap, s.Name+" ("+s.Reason+")")
		}
	}
	if col.SkippedCount > 0 {
		more := ""
		if n := col.SkippedCount - len(col.Skipped); n > 0 {
			more = fmt.Sprintf("; and %d more", n)
		}
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error",
			Summary: fmt.Sprintf("%d outbox entries not collected", col.SkippedCount), Details: strings.Join(listed, "\n") + more})
	}
	if len(overCap) > 0 {
		// A size cap is the user's to change: the result says what it cost.
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\nNot collected, over the output size caps (Settings: maxOutputFileMB %d, maxOutputTaskMB %d): %s.",
			settings.MaxOutputFileMB, settings.MaxOutputTaskMB, strings.Join(overCap, "; ")))
	}
	if rest := col.SkippedCount - len(col.Skipped); rest > 0 || len(listed) > len(overCap) {
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\n%d outbox entries were not collected (hidden, unsafe names, links or special files; see the activity).", col.SkippedCount-len(overCap)))
	}
	now := time.Now().UTC()
	for _, c := range got {
		rel, _ := filepath.Rel(o.cfg.Paths.Home, c.Path)
		out.files = append(out.files, store.TaskFile{Kind: store.FileOutput, Name: c.Name, Size: c.Size,
			MimeType: files.MimeType(c.Name), Path: filepath.ToSlash(rel), CreatedAt: now})
	}
	if len(got) == 0 {
		return
	}
	dir := t.OutputDirectory
	if dir == "" {
		dir = filepath.Join(settings.OutputDirectory, files.TaskFolderName(t.Title, time.Now()))
	}
	placed, err := o.place(dir, got)
	first := len(out.files) - len(got)
	for i, p := range placed {
		out.files[first+i].SavedPath = p
	}
	if err != nil {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "error", Summary: "Could not copy the results to " + dir + ": " + err.Error()})
		// Said where the user reads the result: the files are kept with
		// the session, and can be downloaded.
		out.summary = strings.TrimSpace(out.summary + fmt.Sprintf("\n\n%d of %d output file(s) could not be saved to %s (%v); they are kept with the task: `hivecrew files %s --all` downloads them.",
			len(got)-len(placed), len(got), dir, err, t.ID))
	}
	if len(placed) > 0 {
		out.events = append(out.events, store.Event{Type: "tool_call_result", ActivityType: "info",
			Summary: fmt.Sprintf("%d output file(s) saved to %s", len(placed), dir), Details: strings.Join(placed, "\n")})
	}
}

// place puts collected outputs in the output folder dir, opened now with
// every check made again: since the task was submitted another user may
// have made it, or put a link in its place.
func (o *Orchestrator) place(dir string, got []files.Collected) ([]string, error) {
	fence, err := o.dataFence()
	if err != nil {
		return nil, err
	}
	me := hostpath.Self()
	d, err := files.OpenOutputFolder(dir, me, fence)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return files.Place(d, me, got)
}
