package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Research subagents (issue 36.2). A task of domain host (a subagent
// spawned with domain "host") runs its agent on the host, with no VM: it
// takes no VM slot and waits for none, so that it starts at once even
// while every slot is taken (its parent holds one). Up to maxHostRuns run
// at once; more wait in the queue. Its agent has the host tools alone
// (agent/hostonly.go): web search and reading when its network is the
// internet, MCP servers, skills, subagents within the depth limit. Its
// result is its answer; it has no outbox. Takeover, the live view and
// input have nothing to act on, and say so.

// maxHostRuns bounds the research subagents running at once.
const maxHostRuns = 8

// hostsBusy is why a research subagent waits in the queue.
func hostsBusy() string {
	return fmt.Sprintf("waiting: %d research subagents run on the host already, the most at once", maxHostRuns)
}

// workHost runs a claimed host task and returns how it ended.
func (o *Orchestrator) workHost(r *run, t store.Task) outcome {
	ctx := r.ctx
	settings := o.cfg.Settings()
	client, err := o.runClient(ctx, r, t, settings)
	if err != nil {
		return failed(err.Error())
	}
	if client.Native() == llm.NativeOpenAI {
		return failed(fmt.Sprintf("%s is OpenAI's computer-use model, which works only with a computer: a research subagent needs another model (Settings › Worker model)", t.ModelID))
	}
	sid := uuid.NewString()
	tw, err := trace.Create(o.cfg.Paths.Session(sid))
	if err != nil {
		return failed(err.Error())
	}
	defer tw.Close()
	sess := store.AgentSession{ID: sid, TaskID: t.ID, TracePath: filepath.Join("Sessions", sid)}
	if err := o.cfg.Store.CreateSession(background(), &sess); err != nil {
		return failed(err.Error())
	}
	network := vm.NetworkMode(or(t.NetworkMode, string(settings.NetworkMode)))
	maxIter := t.MaxIterations
	if maxIter == 0 {
		maxIter = settings.DefaultMaxIterations
	}
	budgetUSD, budgetTokens := budgetOf(t, settings)
	window, _ := o.modelFacts(ctx, t.ProviderName, client)
	x := o.extrasFor(ctx, r, t, network, settings)
	defer x.close()
	if kids, ok := x.children.(*children); ok {
		defer kids.cancelAll()
	}
	runner, err := agent.New(agent.Config{
		Task: agent.Task{ID: t.ID, Description: t.Description, Network: config.NetworkMode(network), Host: true,
			Policy:  settings.ToolPolicy.Merge(toPolicy(t.ToolPolicy)),
			Timeout: minutes(t.TimeoutMinutes, settings.DefaultTimeoutMinutes), MaxIterations: maxIter,
			ContextTokens: window, BudgetUSD: budgetUSD, BudgetTokens: budgetTokens, Todo: t.Todo},
		LLM: client, Condenser: o.condenser(ctx, r, t, settings), Trace: tw, Log: o.cfg.Log.With("task", t.ID),
		HostTools: x.tools, Prompt: x.prompt, Context: x.context, Children: x.children,
		Emit:    o.emitter(r, sid, client),
		Live:    func(d agent.Live) { r.live.add(d, func() { o.hub.notify(r.id) }) },
		Changed: o.changed(r),
		Todo:    func(list []store.TodoItem) { o.saveTodo(t.ID, list) },
	})
	if err != nil {
		return failed(err.Error())
	}
	r.mu.Lock()
	r.runner, r.sessionID = runner, sid
	r.mu.Unlock()
	now := time.Now().UTC()
	if _, err := o.update(t.ID, store.Update{
		Mutate: func(t *store.Task) error {
			t.Status, t.StatusReason, t.StartedAt, t.SessionID = store.StatusRunning, "", &now, sid
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusRunning, "Research subagent started on the host (no VM)")},
	}); err != nil {
		return failed(err.Error())
	}
	res := runner.Run(ctx)
	out := outcome{status: res.Status, summary: res.Summary, success: res.Success, steps: res.Steps, usage: res.Usage, cost: res.CostUSD}
	if res.Status == store.StatusCancelled {
		out = stopped(ctx, &out)
	}
	sess.StepCount, sess.PromptTokens, sess.CompletionTokens, sess.CostUSD = res.Steps, int64(res.Usage.Prompt), int64(res.Usage.Completion), res.CostUSD
	if err := o.cfg.Store.EndSession(background(), sess); err != nil {
		o.cfg.Log.Error("end session", "task", t.ID, "err", err)
	}
	return out
}

// noVMHere refuses what needs a VM of a task that runs on the host.
func noVMHere(r *run, what string) error {
	if r == nil || !r.host {
		return nil
	}
	return errdefs.Conflictf("cannot %s task %s: it is a research subagent, which works on the host without a VM", what, r.id)
}

// recoverHost ends the research subagents a previous helper left active
// or queued: the parent that waited for their answers lost them with the
// helper (it is held or failed itself), so none is held for a resume or
// started.
func (o *Orchestrator) recoverHost(ctx context.Context) error {
	ts, err := o.cfg.Store.TasksInStatus(ctx, store.StatusQueued, store.StatusWaitingForVM, store.StatusRunning, store.StatusPaused)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if !t.OnHost() {
			continue
		}
		status, summary := store.StatusFailed, "Interrupted: the helper restarted while this research subagent worked; its parent no longer waits for it."
		if t.Status == store.StatusQueued {
			status, summary = store.StatusCancelled, "Cancelled: the helper restarted before this research subagent started; its parent no longer waits for it."
		}
		if _, err := o.finishTask(ctx, t.ID, outcome{status: status, summary: summary}, nil); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			return err
		}
		o.cfg.Log.Warn("research subagent ended by a helper restart", "task", t.ID, "status", status)
	}
	return nil
}
