package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Live is what only a running agent knows: what it waits on and whether the
// user drives its VM.
type Live struct {
	Question   *agent.Question
	Permission *agent.Permission
	TakenOver  bool
	VMID       string
	// Screen is the guest's display, as its hello reported it.
	Screen protocol.Screen
}

// Live returns a task's live state; ok is false when it has no agent.
func (o *Orchestrator) Live(id string) (Live, bool) {
	r, ok := o.activeRun(id)
	if !ok {
		return Live{}, false
	}
	runner, lease, _ := r.get()
	if runner == nil {
		return Live{}, false
	}
	q, p := runner.Pending()
	live := Live{Question: q, Permission: p, TakenOver: runner.TakenOver()}
	if lease != nil { // none while the VM of a held task is released
		live.VMID, live.Screen = lease.ID(), lease.Guest().Hello().Screen
	}
	return live, true
}

// agentOf returns a task's running agent, or a conflict error saying what
// the task is doing instead.
func (o *Orchestrator) agentOf(ctx context.Context, id, action string) (*run, *agent.Runner, error) {
	if r, ok := o.activeRun(id); ok {
		if runner, _, _ := r.get(); runner != nil {
			return r, runner, nil
		}
	}
	t, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	switch t.Status {
	case store.StatusPlanReview:
		return nil, nil, errdefs.Conflictf("cannot %s task %s: its plan waits for review (approve_plan, edit_plan or cancel_plan)", action, id)
	case store.StatusPlanning:
		return nil, nil, errdefs.Conflictf("cannot %s task %s: the model is still writing its plan", action, id)
	}
	return nil, nil, errdefs.Conflictf("cannot %s task %s: it is %s, not running", action, id, t.Status)
}

// noAgent makes agentOf's "not running" a not-found: there is no agent,
// so no question or request, to answer (as the Swift server says).
func noAgent(err error) error {
	if errors.Is(err, errdefs.ErrConflict) {
		return errdefs.NotFoundf("%s: no active agent", err.Error())
	}
	return err
}

// intervene records what the user did in the agent's session, once what
// the agent recorded of it is written: the caller's answer shows it.
func (o *Orchestrator) intervene(r *run, kind store.InterventionKind, text string) {
	o.rec.Flush(r.id)
	_, _, sid := r.get()
	if err := o.cfg.Store.AddIntervention(background(), store.Intervention{SessionID: sid, Kind: kind, Text: text}); err != nil {
		o.cfg.Log.Error("record intervention", "task", r.id, "err", err)
	}
}

// Pause stops a running agent before its next action.
func (o *Orchestrator) Pause(ctx context.Context, id string) error {
	r, runner, err := o.agentOf(ctx, id, "pause")
	if err != nil {
		return err
	}
	if st, _ := runner.Status(); st != store.StatusRunning {
		return errdefs.Conflictf("cannot pause task %s: it is %s", id, st)
	}
	runner.Pause()
	o.intervene(r, store.InterventionPause, "")
	return nil
}

// Resume lets a paused agent go on, with optional new instructions. After a
// takeover it hands the VM back.
func (o *Orchestrator) Resume(ctx context.Context, id, instructions string, budget Budget) error {
	r, runner, err := o.agentOf(ctx, id, "resume")
	if err != nil {
		if t, gerr := o.cfg.Store.GetTask(ctx, id); gerr == nil && o.restartHeld(t) {
			return o.resumeHeldAfterRestart(ctx, t, instructions, budget)
		}
		return err
	}
	if budget.USD != nil || budget.Tokens != nil {
		if err := checkBudget(budget.USD, budget.Tokens); err != nil {
			return err
		}
		t, err := o.update(id, store.Update{Mutate: func(t *store.Task) error {
			if budget.USD != nil {
				t.BudgetUSD = budget.USD
			}
			if budget.Tokens != nil {
				t.BudgetTokens = budget.Tokens
			}
			return nil
		}})
		if err != nil {
			return err
		}
		usd, tokens := budgetOf(t, o.cfg.Settings())
		runner.SetBudget(usd, tokens)
	}
	if budget.ExtraSteps != nil || budget.ExtraMinutes != nil {
		steps, mins, err := budget.extension()
		if err != nil {
			return err
		}
		if !runner.IsPaused() {
			return errdefs.Conflictf("cannot resume task %s: it is not paused", id)
		}
		runner.Extend(steps, fractionMinutes(mins))
	}
	taken := runner.TakenOver()
	if r.needsFreshVM() && !taken {
		// Its VM was released while it was held, or its guest does not
		// answer: the agent goes on once a fresh VM is in.
		if !runner.IsPaused() {
			return errdefs.Conflictf("cannot resume task %s: it is not paused", id)
		}
		t, err := o.cfg.Store.GetTask(ctx, id)
		if err != nil {
			return err
		}
		go o.resumeInFreshVM(r, t, instructions)
		o.intervene(r, store.InterventionResume, instructions)
		return nil
	}
	if !runner.Resume(instructions) {
		return errdefs.Conflictf("cannot resume task %s: it is not paused", id)
	}
	kind := store.InterventionResume
	if taken {
		kind = store.InterventionHandBack
	}
	o.intervene(r, kind, instructions)
	return nil
}

// TakeOver pauses the agent and gives the VM to the user.
func (o *Orchestrator) TakeOver(ctx context.Context, id string) error {
	r, runner, err := o.agentOf(ctx, id, "take over")
	if err != nil {
		return err
	}
	if err := noVMHere(r, "take over"); err != nil {
		return err
	}
	if runner.TakenOver() {
		return errdefs.Conflictf("task %s is already taken over", id)
	}
	if _, lease, _ := r.get(); lease == nil {
		return errdefs.Conflictf("task %s has no VM to take over: it was released while the task was held; resume the task to start a fresh one", id)
	}
	runner.TakeOver()
	o.intervene(r, store.InterventionTakeover, "")
	return nil
}

// ShowVM takes a task over in the VM's native window (macOS guests): the
// agent pauses, the helper shows the window, and closing it hands back.
func (o *Orchestrator) ShowVM(ctx context.Context, id string) error {
	r, _, err := o.agentOf(ctx, id, "show the VM of")
	if err != nil {
		return err
	}
	if err := noVMHere(r, "show the VM of"); err != nil {
		return err
	}
	_, lease, _ := r.get()
	if lease == nil {
		return errdefs.Conflictf("task %s has no VM to show: it was released while the task was held; resume the task to start a fresh one", id)
	}
	d, ok := lease.Machine().(vm.Displayer)
	if !ok {
		return errdefs.Unsupportedf("this VM has no native window (the sandbox backend): take over in the web view instead")
	}
	runner, _, _ := r.get()
	if !runner.TakenOver() {
		if err := o.TakeOver(ctx, id); err != nil {
			return err
		}
	}
	closed := func() {
		if err := o.HandBack(context.Background(), id, ""); err != nil && !errors.Is(err, errdefs.ErrConflict) {
			o.cfg.Log.Error("hand back after the VM window closed", "task", id, "err", err)
		}
	}
	if err := d.ShowDisplay(ctx, closed); err != nil {
		closed()
		return fmt.Errorf("show the VM window: %w", err)
	}
	return nil
}

// HandBack ends a takeover and resumes the agent.
func (o *Orchestrator) HandBack(ctx context.Context, id, instructions string) error {
	_, runner, err := o.agentOf(ctx, id, "hand back")
	if err != nil {
		return err
	}
	if !runner.TakenOver() {
		return errdefs.Conflictf("task %s is not taken over", id)
	}
	if err := o.Resume(ctx, id, instructions, Budget{}); err != nil {
		return err
	}
	// A native VM window still open goes too (its closing hands back,
	// which is then a no-op).
	if r, ok := o.activeRun(id); ok {
		if _, lease, _ := r.get(); lease != nil {
			if d, ok := lease.Machine().(vm.Displayer); ok {
				d.HideDisplay()
			}
		}
	}
	return nil
}

// Instruct adds instructions for the agent's next turn without pausing it.
func (o *Orchestrator) Instruct(ctx context.Context, id, text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return errdefs.Invalidf("text is required")
	}
	r, runner, err := o.agentOf(ctx, id, "instruct")
	if err != nil {
		return err
	}
	runner.Instruct(text)
	o.intervene(r, store.InterventionInstructions, text)
	return nil
}

// Cancel stops a task: an active one at once (its VM is destroyed, its
// plan's model call interrupted), a queued one before it starts, one whose
// plan waits for review at once.
func (o *Orchestrator) Cancel(ctx context.Context, id string) error {
	if r, ok := o.activeRun(id); ok {
		if runner, _, _ := r.get(); runner != nil {
			runner.Cancel()
			r.stopHooks() // an agent that has ended may wait on its check
			o.intervene(r, store.InterventionCancel, "")
		} else {
			r.stop(errUserCancel)
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !r.planning {
			return nil
		}
		// A planning run may have left its plan under review just before
		// the stop: the plan is cancelled below.
		if t, err := o.cfg.Store.GetTask(ctx, id); err != nil || t.Status != store.StatusPlanReview {
			return err
		}
	}
	summary := "Cancelled by the user before it started."
	if t, err := o.cfg.Store.GetTask(ctx, id); err == nil && o.restartHeld(t) {
		summary = "Cancelled by the user while it was held after a helper restart."
	}
	_, err := o.finishTask(ctx, id, outcome{status: store.StatusCancelled, summary: summary,
		only: func(t *store.Task) error {
			if t.Status == store.StatusPlanReview || o.restartHeld(*t) {
				return nil
			}
			return onlyQueued(t)
		}}, nil)
	if errors.Is(err, errdefs.ErrConflict) {
		// It left the queue meanwhile: it is active now, or finished.
		if r, ok := o.activeRun(id); ok {
			r.stop(errUserCancel)
			<-r.done
			return nil
		}
		t, gerr := o.cfg.Store.GetTask(ctx, id)
		if gerr == nil && t.Status.Terminal() {
			return errdefs.Conflictf("task %s has already ended (%s)", id, t.Status)
		}
	}
	return err
}

// Answer answers the agent's pending question.
func (o *Orchestrator) Answer(ctx context.Context, id, questionID, answer string) error {
	r, runner, err := o.agentOf(ctx, id, "answer")
	if err != nil {
		return noAgent(err)
	}
	q, _ := runner.Pending()
	if err := runner.Answer(questionID, answer); err != nil {
		return err
	}
	now := time.Now().UTC()
	kind := "text"
	if len(q.Options) > 0 {
		kind = "multipleChoice"
	}
	if err := o.cfg.Store.SaveQuestion(background(), store.Question{ID: q.ID, TaskID: id, Kind: kind, Question: q.Text, Options: q.Options,
		CreatedAt: q.Created, Answer: &answer, AnsweredAt: &now}); err != nil {
		o.cfg.Log.Error("save answer", "task", r.id, "err", err)
	}
	o.rec.Flush(id) // the agent's going on is in the task the caller reads next
	return nil
}

// Respond approves or denies the agent's pending permission request.
func (o *Orchestrator) Respond(ctx context.Context, id, permissionID string, approved bool) error {
	r, runner, err := o.agentOf(ctx, id, "respond to")
	if err != nil {
		return noAgent(err)
	}
	_, p := runner.Pending()
	if err := runner.Respond(permissionID, approved); err != nil {
		return err
	}
	now := time.Now().UTC()
	if err := o.cfg.Store.SavePermission(background(), store.PermissionRequest{ID: p.ID, TaskID: id, ToolName: p.Tool, Details: p.Details,
		CreatedAt: p.Created, Approved: &approved, RespondedAt: &now}); err != nil {
		o.cfg.Log.Error("save permission answer", "task", r.id, "err", err)
	}
	o.rec.Flush(id) // the agent's going on is in the task the caller reads next
	return nil
}

// Input forwards one pointer or keyboard event of the user to the guest.
// Only a taken-over task accepts input; coordinates are guest points.
func (o *Orchestrator) Input(ctx context.Context, id string, in wire.Input) error {
	if err := guest.CheckInputType(in.Type); err != nil {
		return err
	}
	r, runner, err := o.agentOf(ctx, id, "send input to")
	if err != nil {
		return err
	}
	if !runner.TakenOver() {
		return errdefs.Conflictf("task %s is not taken over: take over before sending input", id)
	}
	_, lease, _ := r.get()
	if lease == nil {
		return errdefs.Conflictf("task %s has no VM at the moment", id)
	}
	return lease.Guest().Input(ctx, in)
}

// Frame takes a live screenshot of a task's VM for watching.
func (o *Orchestrator) Frame(ctx context.Context, id string, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	r, ok := o.activeRun(id)
	if ok {
		if err := noVMHere(r, "watch the screen of"); err != nil {
			return protocol.ScreenshotResult{}, err
		}
		if _, lease, _ := r.get(); lease != nil {
			return lease.Guest().Screenshot(ctx, p)
		}
	}
	return protocol.ScreenshotResult{}, errdefs.Conflictf("task %s has no running VM to watch", id)
}

// Budget is what a resume changes first: a new budget, and more steps or
// time for a task held at its limit; nil fields stay as they are.
type Budget struct {
	USD    *float64
	Tokens *int64
	// ExtraSteps and ExtraMinutes raise the step and time limits.
	ExtraSteps   *int
	ExtraMinutes *float64
}

// extension reads the extra steps and minutes of a resume: 0 when not
// given; out of bounds (0-10000 steps, 0-1440 minutes), an invalid request.
func (b Budget) extension() (steps int, mins float64, err error) {
	if b.ExtraSteps != nil {
		steps = *b.ExtraSteps
	}
	if b.ExtraMinutes != nil {
		mins = *b.ExtraMinutes
	}
	if steps < 0 || steps > 10000 || mins < 0 || mins > 1440 {
		return 0, 0, errdefs.Invalidf("extraSteps (0 to 10000) and extraMinutes (0 to 1440): got %d and %g", steps, mins)
	}
	return steps, mins, nil
}

// budgetOf is a task's budget: its own, else Settings' (0: none).
func budgetOf(t store.Task, s config.Settings) (usd float64, tokens int64) {
	usd, tokens = s.TaskBudgetUSD, s.TaskBudgetTokens
	if t.BudgetUSD != nil {
		usd = *t.BudgetUSD
	}
	if t.BudgetTokens != nil {
		tokens = *t.BudgetTokens
	}
	return usd, tokens
}
