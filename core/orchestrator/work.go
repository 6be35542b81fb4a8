package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vault"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/writeback"
)

// job is what the stages of one run of a task in a VM (work) hand on to
// each other. Each stage fills in its part; the run's own state (its
// lease, runner and session) is on run, where the user's hold sees it.
type job struct {
	r        *run
	t        store.Task
	settings config.Settings

	// prepareInputs
	client      *llm.Client
	tmpl        store.Template
	description string
	todo        []store.TodoItem
	network     vm.NetworkMode

	// openSession
	sid  string
	tw   *trace.Writer
	sess store.AgentSession

	// stageVM
	shared string
	resume *agent.Resume
	hooks  evalhooks.Hooks
	plan   provision.Plan

	// buildRunner
	runner *agent.Runner
}

// endRun is a stage's error that is how the run ends; any other error a
// stage returns ends it failed, with the error as its summary.
type endRun struct{ out outcome }

func (e endRun) Error() string { return e.out.summary }

// failWith ends a run failed with summary.
func failWith(summary string) error { return endRun{failed(summary)} }

// work runs a claimed task in a VM and returns how it ended. The VM is
// released before it returns. Its stages, in order: prepareInputs,
// leaseVM, openSession, stageVM, buildRunner, markRunning, runLoop, and
// then either holdForResume (the helper stops under a conversation to go
// on from) or settle and collectOutputs.
func (o *Orchestrator) work(r *run, t store.Task) outcome {
	j := &job{r: r, t: t, settings: o.cfg.Settings()}
	if err := o.prepareInputs(j); err != nil {
		return endOf(err)
	}
	if err := o.leaseVM(j); err != nil {
		return endOf(err)
	}
	defer o.releaseLease(j)
	if err := o.openSession(j); err != nil {
		return endOf(err)
	}
	defer j.tw.Close()
	if err := o.stageVM(j); err != nil {
		return endOf(err)
	}
	x, err := o.buildRunner(j)
	if err != nil {
		return endOf(err)
	}
	defer x.close()
	if kids, ok := x.children.(*children); ok {
		defer kids.cancelAll() // however the parent ends, its children end
	}
	if err := o.markRunning(j); err != nil {
		return endOf(err)
	}
	runCtx, cancelRun := context.WithCancelCause(r.ctx)
	defer cancelRun(nil)
	res := o.runLoop(runCtx, j, cancelRun)
	if _, cerr := agent.LoadConversation(j.tw.Dir()); errors.Is(context.Cause(runCtx), errShutdown) && cerr == nil {
		return o.holdForResume(j, res)
	}
	r.vmMu.Lock() // no release or fresh VM from here on
	defer r.vmMu.Unlock()
	_, lease, _ := r.get()
	out := o.settle(runCtx, j, lease, res)
	return o.collectOutputs(runCtx, j, lease, out)
}

// endOf is the outcome a stage's error ends the run with.
func endOf(err error) outcome {
	var e endRun
	if errors.As(err, &e) {
		return e.out
	}
	return failed(err.Error())
}

// prepareInputs reads what the run needs before a VM: the model's client,
// the template, and the agent's description and checklist (an approved
// plan's included).
func (o *Orchestrator) prepareInputs(j *job) error {
	t, ctx := j.t, j.r.ctx
	client, err := o.runClient(ctx, j.r, t, j.settings)
	if err != nil {
		return err
	}
	tmpl, err := o.template(ctx, t.TemplateID, j.settings)
	if err != nil {
		return err
	}
	j.client, j.tmpl = client, tmpl
	j.description, j.todo = t.Description, t.Todo
	if t.PlanFirst {
		// The claim took only a task whose plan the user approved; its
		// items are the checklist the agent starts with.
		j.description += "\n\nFollow this plan, which the user approved:\n" + t.PlanMarkdown
		if len(j.todo) == 0 {
			j.todo = planItems(t.PlanMarkdown)
		}
	}
	j.network = vm.NetworkMode(or(t.NetworkMode, string(j.settings.NetworkMode)))
	return nil
}

// leaseVM asks the pool for the run's VM, waiting (and saying why) while
// none is free.
func (o *Orchestrator) leaseVM(j *job) error {
	r, t, ctx := j.r, j.t, j.r.ctx
	r.req = pool.Request{
		TaskID: t.ID, Template: vm.Template{ID: j.tmpl.ID, Kind: vm.TemplateKind(j.tmpl.Kind), Path: j.tmpl.Path},
		Network: j.network, CPUs: j.tmpl.CPUCount, MemoryMB: j.tmpl.MemoryMB, AllowHosts: t.AllowHosts,
		OnWait: func(reason string) { o.setWaiting(t.ID, reason) },
	}
	lease, err := o.cfg.Pool.Acquire(ctx, r.req)
	if err != nil {
		if ctx.Err() != nil {
			return endRun{stopped(ctx, nil)}
		}
		return failWith("No VM for this task: " + err.Error())
	}
	r.mu.Lock()
	r.lease = lease
	r.mu.Unlock()
	return nil
}

// releaseLease releases the run's VM at its end. The run's VM may change (a
// held task's is released, and a fresh one leased on resume: vmhold.go);
// whichever it has at the end is released.
func (o *Orchestrator) releaseLease(j *job) {
	if _, l, _ := j.r.get(); l != nil {
		if err := l.Release(background()); err != nil {
			o.cfg.Log.Error("release VM", "task", j.t.ID, "vm", l.ID(), "err", err)
		}
	}
}

// openSession opens the run's trace and agent session: a resumed task
// goes on in its session (restart.go); any other starts one.
func (o *Orchestrator) openSession(j *job) error {
	j.sid = uuid.NewString()
	if j.t.Resume != nil {
		j.sid = j.t.Resume.SessionID
	}
	tw, err := trace.Create(o.cfg.Paths.Session(j.sid))
	if err != nil {
		return err
	}
	j.sess = store.AgentSession{ID: j.sid, TaskID: j.t.ID, TracePath: filepath.Join("Sessions", j.sid)}
	if j.t.Resume == nil {
		if err := o.cfg.Store.CreateSession(background(), &j.sess); err != nil {
			tw.Close()
			return err
		}
	}
	j.tw = tw
	return nil
}

// stageVM gives the VM what the agent works with: a resumed task's kept
// outbox, the input files, the host folders, and the provisioning (its
// files staged in the shared folder).
func (o *Orchestrator) stageVM(j *job) error {
	t, ctx := j.t, j.r.ctx
	_, lease, _ := j.r.get()
	j.shared = lease.Machine().Spec().SharedDir()
	dir := j.tw.Dir()
	if t.Resume != nil {
		kept, err := files.CarryIn(filepath.Join(carriedDir(dir), files.Outbox), j.shared)
		if err == nil {
			j.resume, err = o.resumeFrom(t, kept)
		}
		if err != nil {
			return failWith("Could not resume the task: " + err.Error())
		}
	}
	if err := o.copyInputs(ctx, t.ID, j.shared); err != nil {
		return failWith("Could not give the input files to the VM: " + err.Error())
	}
	var err error
	if t.Resume != nil && writeback.Carried(carriedDir(dir)) {
		err = writeback.Carry(carriedDir(dir), j.shared)
	} else {
		err = writeback.Stage(ctx, o.cfg.Paths.Home, t, j.shared, dir)
	}
	if err != nil {
		return failWith("Could not give the host folders to the VM: " + err.Error())
	}
	if j.hooks, err = o.readHooks(t.ID); err != nil {
		return err
	}
	j.plan, err = o.provisionPlan(t, j.tmpl, j.hooks.Setup)
	if err == nil {
		err = provision.Stage(j.plan, j.shared)
	}
	if err != nil {
		return failWith("Could not provision the VM: " + err.Error())
	}
	return nil
}

// buildRunner makes the agent of the run with its limits, tools, vault
// and callbacks, and attaches it to the run. The extras it returns (host
// tools, subagents) are the caller's to close once the agent has ended.
func (o *Orchestrator) buildRunner(j *job) (extras, error) {
	r, t, ctx, settings := j.r, j.t, j.r.ctx, j.settings
	maxIter := t.MaxIterations
	if maxIter == 0 {
		maxIter = settings.DefaultMaxIterations
	}
	budgetUSD, budgetTokens := budgetOf(t, settings)
	window, noVision := o.modelFacts(ctx, t.ProviderName, j.client)
	var vlt agent.Vault // none without a secret store
	var err error
	if o.cfg.Secret != nil {
		vlt, err = vault.Open(ctx, o.cfg.Store, o.cfg.Secret)
	}
	if err != nil {
		return extras{}, failWith("Could not read the stored credentials: " + err.Error())
	}
	x := o.extrasFor(ctx, r, t, j.network, settings)
	runner, err := agent.New(agent.Config{
		Task: agent.Task{ID: t.ID, Description: j.description, Network: config.NetworkMode(j.network),
			Policy:  settings.ToolPolicy.Merge(toPolicy(t.ToolPolicy)),
			Timeout: minutes(t.TimeoutMinutes, settings.DefaultTimeoutMinutes), MaxIterations: maxIter,
			ShotW: settings.ScreenshotMaxWidth, ShotH: settings.ScreenshotMaxHeight,
			ContextTokens: window, BudgetUSD: budgetUSD, BudgetTokens: budgetTokens, Todo: j.todo,
			MaxFailedChecks: settings.CompletionCheckTries,
			TextOnly:        noVision || slices.Contains(settings.TextOnlyModels, t.ModelID),
			LimitGrace:      fractionMinutes(settings.LimitGraceMinutes)},
		LLM: j.client, Condenser: o.condenser(ctx, r, t, settings), Guest: runGuest{r: r}, Trace: j.tw, Log: o.cfg.Log.With("task", t.ID), Vault: vlt,
		HostTools: x.tools, Prompt: append(x.prompt, writeback.Prompt(t)...), Context: joinContext(t.ContextNote, x.context), Children: x.children,
		Emit:      o.emitter(r, j.sid, j.client),
		Live:      func(d agent.Live) { r.live.add(d, func() { o.hub.notify(r.id) }) },
		Changed:   o.changed(r),
		Provision: j.plan,
		Resume:    j.resume,
		Todo:      func(list []store.TodoItem) { o.saveTodo(t.ID, list) },
	})
	if err != nil {
		if kids, ok := x.children.(*children); ok {
			kids.cancelAll()
		}
		x.close()
		return extras{}, err
	}
	j.runner = runner
	_, lease, _ := r.get()
	r.mu.Lock()
	r.runner, r.sessionID, r.shared, r.plan = runner, j.sid, j.shared, j.plan
	r.mu.Unlock()
	o.attach(r, lease, runner)
	return x, nil
}

// markRunning records that the agent started in its VM.
func (o *Orchestrator) markRunning(j *job) error {
	_, lease, _ := j.r.get()
	now := time.Now().UTC()
	_, err := o.update(j.t.ID, store.Update{
		Mutate: func(t *store.Task) error {
			t.Status, t.StatusReason, t.StartedAt, t.VMID, t.SessionID = store.StatusRunning, "", &now, lease.ID(), j.sid
			t.Todo = j.todo
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusRunning, "Agent started in VM "+lease.ID())},
	})
	return err
}

// runLoop runs the agent until it ends. A VM that fails ends the run
// (cancelRun); a held task's VM may be released meanwhile, and a fresh one
// leased on resume (vmhold.go): both watchers end with the agent.
func (o *Orchestrator) runLoop(runCtx context.Context, j *job, cancelRun context.CancelCauseFunc) agent.Result {
	r := j.r
	vmCtx, endVM := context.WithCancel(runCtx)
	defer endVM()
	r.mu.Lock()
	r.vmCtx = vmCtx
	r.mu.Unlock()
	go o.watchVM(vmCtx, r, cancelRun)
	go o.releaseWhenHeld(vmCtx, r, j.t, j.tw.Dir())
	return j.runner.Run(runCtx)
}

// holdForResume ends a run the helper stops under an agent that has a
// conversation to go on from: its outbox is kept for the fresh VM of its
// resume, and it is held (restart.go), not ended.
func (o *Orchestrator) holdForResume(j *job, res agent.Result) outcome {
	n, _, err := o.releaseVMWithin(background(), j.r, j.t, j.tw.Dir(), 0, stoppedCollect)
	if err != nil {
		o.cfg.Log.Error("keep the outbox of a task held by the helper's stop", "task", j.t.ID, "err", err)
	}
	return outcome{held: true, steps: res.Steps, summary: fmt.Sprintf("%d outbox file(s) kept", n)}
}

// settle turns the agent's result into the run's outcome: a failed VM or
// a stop is the reason when it is one, the session is ended, and the
// task's check command (hooks.go) runs while the VM still does.
func (o *Orchestrator) settle(runCtx context.Context, j *job, lease *pool.Lease, res agent.Result) outcome {
	out := outcome{status: res.Status, summary: res.Summary, success: res.Success, steps: res.Steps, usage: res.Usage, cost: res.CostUSD}
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
	sess := j.sess
	sess.StepCount, sess.PromptTokens, sess.CompletionTokens, sess.CostUSD = res.Steps, int64(res.Usage.Prompt), int64(res.Usage.Completion), res.CostUSD
	if err := o.cfg.Store.EndSession(background(), sess); err != nil {
		o.cfg.Log.Error("end session", "task", j.t.ID, "err", err)
	}
	if out.status != store.StatusCancelled && runCtx.Err() == nil {
		// Before the VM stops, and before a stop's short deadlines are
		// chosen: the kill switch still cancels the check (ctx).
		o.checkVM(j.r, j.hooks, lease, j.tw.Dir(), &out)
	}
	return out
}

// joinContext is what goes before a task in its agent's first message: the
// note about the task it continues, then the rest.
func joinContext(note, rest string) string {
	switch {
	case note == "":
		return rest
	case rest == "":
		return note
	}
	return note + "\n\n" + rest
}
