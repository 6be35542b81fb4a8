package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// Restarts. An agent's conversation is kept in its session as it grows
// (core/agent/conversation.go), so a task the helper stopped under, by a
// crash, a SIGKILL or a stop, is not lost with the helper's memory:
//   - one that was running or held, with a conversation to go on from, is
//     held after the restart (reasonRestartHeld): the user resumes it (it
//     is queued, and its next run leases a fresh VM, gives it the inputs
//     and what was kept of the outbox, and goes on from the conversation
//     with a note of what was lost) or cancels it;
//   - one that waited for its first VM, or whose agent had not taken its
//     first step, is queued again;
//   - one with nothing to go on from (no session, or a conversation an
//     older helper wrote) fails with "helper restarted", as before.

// reasonRestartHeld is the status reason of a task held after a restart.
const reasonRestartHeld = "held: the helper stopped while this task was active; resume it to go on in a fresh VM with its conversation so far, or cancel it"

// restartWhy is what the agent is told stopped its session.
const restartWhy = "the Hivecrew helper stopped while this task was active (it was restarted)"

// recoverTask ends, holds or queues again a task a previous helper left
// active, and says which it did.
func (o *Orchestrator) recoverTask(ctx context.Context, t store.Task) (string, error) {
	requeue := func(why string) (string, error) {
		_, _, err := o.cfg.Store.UpdateTask(ctx, t.ID, store.Update{
			Mutate: func(t *store.Task) error {
				if t.Status.Terminal() {
					return errdefs.Conflictf("task %s has ended", t.ID)
				}
				t.Status, t.StatusReason, t.VMID, t.Resume = store.StatusQueued, "queued again: "+why, "", nil
				return nil
			},
			Events: []store.Event{statusEvent(store.StatusQueued, "Queued again: "+why)},
		})
		return "queued again", err
	}
	if t.SessionID == "" {
		return requeue("the helper restarted before the task's VM was ready")
	}
	_, err := agent.LoadConversation(o.cfg.Paths.Session(t.SessionID))
	switch {
	case err == nil:
		_, _, err := o.cfg.Store.UpdateTask(ctx, t.ID, store.Update{
			Mutate: func(t *store.Task) error {
				if t.Status.Terminal() {
					return errdefs.Conflictf("task %s has ended", t.ID)
				}
				t.Status, t.StatusReason, t.VMID, t.Resume = store.StatusPaused, reasonRestartHeld, "", nil
				return nil
			},
			Events: []store.Event{statusEvent(store.StatusPaused, "Held after a helper restart: resume the task to go on in a fresh VM with its conversation so far")},
		})
		return "held", err
	case errors.Is(err, agent.ErrNoConversation):
		return requeue("the helper restarted before the agent's first step")
	case !errors.Is(err, agent.ErrOldConversation):
		o.cfg.Log.Warn("the conversation of an interrupted task cannot be read", "task", t.ID, "err", err)
	}
	_, err = o.finishTask(ctx, t.ID, outcome{status: store.StatusFailed, summary: "helper restarted"}, nil)
	return "failed", err
}

// restartHeld reports whether t is held after a restart: paused with no
// run of this helper behind it.
func (o *Orchestrator) restartHeld(t store.Task) bool {
	if t.Status != store.StatusPaused {
		return false
	}
	_, active := o.activeRun(t.ID)
	return !active
}

// resumeRestarted queues a task held after a restart to go on from its
// session, with the user's instructions.
func (o *Orchestrator) resumeRestarted(ctx context.Context, id, instructions string) error {
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if !o.restartHeld(*t) || t.SessionID == "" {
				return errdefs.Conflictf("cannot resume task %s: it is %s, not held", id, t.Status)
			}
			t.Status, t.StatusReason = store.StatusQueued, "resuming: waiting for a fresh VM"
			t.Resume = &store.TaskResume{SessionID: t.SessionID, Instructions: instructions, Why: restartWhy}
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusQueued, "Resumed by the user: the task goes on in a fresh VM with its conversation so far")},
	})
	if err == nil {
		o.Kick()
	}
	return err
}

// resumeFrom is what a run that goes on from a session starts with: the
// conversation, the steps and tokens so far, and the agent's note.
func (o *Orchestrator) resumeFrom(t store.Task, kept int) (*agent.Resume, error) {
	msgs, err := agent.LoadConversation(o.cfg.Paths.Session(t.Resume.SessionID))
	if err != nil {
		return nil, fmt.Errorf("the task cannot go on from its conversation: %w", err)
	}
	note := fmt.Sprintf("%s. The task goes on in a fresh VM from the template: its inbox is there, and %d file(s) kept of what you had saved in outbox/. "+
		"What you did after your last answer was saved (its results), open applications, workspace/ and settings of the old VM may be lost: look at the screen before you go on.",
		strings.TrimSuffix(t.Resume.Why, "."), kept)
	if ins := strings.TrimSpace(t.Resume.Instructions); ins != "" {
		note += "\nNew instructions from the user: " + ins
	}
	usage := llm.Usage{Prompt: int(t.PromptTokens - t.TitlePromptTokens), Completion: int(t.CompletionTokens - t.TitleCompletionTokens)}
	usage.Total = usage.Prompt + usage.Completion
	return &agent.Resume{Conversation: msgs, Steps: t.StepCount, Usage: usage, Note: note}, nil
}

// resumeHeldAfterRestart resumes a task held after a restart: the budget
// and limits given with the resume are the task's from now on, and it is
// queued to go on from its session.
func (o *Orchestrator) resumeHeldAfterRestart(ctx context.Context, t store.Task, instructions string, budget Budget) error {
	if budget.USD != nil || budget.Tokens != nil {
		if err := checkBudget(budget.USD, budget.Tokens); err != nil {
			return err
		}
	}
	steps, _, err := budget.extension()
	if err != nil {
		return err
	}
	settings := o.cfg.Settings()
	if _, err := o.update(t.ID, store.Update{Mutate: func(t *store.Task) error {
		if budget.USD != nil {
			t.BudgetUSD = budget.USD
		}
		if budget.Tokens != nil {
			t.BudgetTokens = budget.Tokens
		}
		if steps > 0 {
			limit := t.MaxIterations
			if limit == 0 {
				limit = settings.DefaultMaxIterations
			}
			t.MaxIterations = max(limit, t.StepCount) + steps
		}
		return nil
	}}); err != nil {
		return err
	}
	return o.resumeRestarted(ctx, t.ID, instructions)
}

// holdStopped holds a task whose agent the helper's stop interrupted, for
// the user to resume after the next start.
func (o *Orchestrator) holdStopped(id, kept string) error {
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status.Terminal() {
				return errdefs.Conflictf("task %s has ended", id)
			}
			t.Status, t.StatusReason, t.VMID = store.StatusPaused, reasonRestartHeld, ""
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusPaused, "Held: the helper stopped ("+kept+"); resume the task after it starts again to go on in a fresh VM")},
	})
	return err
}
