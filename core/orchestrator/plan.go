package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Plan-first tasks, as the Swift server has them: a queued task without a
// plan is planning while the model writes one (no VM, no VM slot), then
// planReview until the user approves it (approve_plan), replaces and
// approves it (edit_plan) or cancels it (cancel_plan). An approved task is
// queued again with its plan and runs like any other. A model that fails,
// answers with a tool call or writes nothing ends the task planFailed.
//
// The plan streams as the model writes it (LiveAnswer, as an agent's
// answers do). Under review, the user may also ask for changes in words
// (revise_plan): the task is queued to plan again with the plan and the
// request (PlanRevision), the model rewrites the plan, and it is under
// review again; a rewrite that fails leaves the plan as it was, under
// review, and says why.
//
// Every plan state is in the store, so a helper restart loses nothing: a
// plan under review stays under review, and a task that was planning is
// queued to plan again (Recover).

const planPrompt = `You plan tasks for an AI agent that operates a computer (screenshots, mouse, keyboard, files, shell) inside an isolated VM. Input files are in inbox/ of the shared folder; results go to outbox/. Write a short, numbered plan in Markdown: the steps the agent will take and what it will save to outbox/. Do not carry out the task.`

// revisePrompt asks the model to rewrite its plan as the user says.
const revisePrompt = "The user asks for changes to this plan:\n\n%s\n\nWrite the whole plan again with the changes, in the same form: a short, numbered plan in Markdown."

// maxRevision bounds what the user asks to change in a plan.
const maxRevision = 8 << 10

// Status reasons of the plan states.
const (
	reasonPlanning   = "writing a plan"
	reasonPlanReview = "waiting for plan approval"
)

// maxPlanning bounds the plans written at once (they hold no VM slot).
const maxPlanning = 8

// needsPlan reports whether a queued task must be planned (or its plan
// rewritten) before it runs.
func needsPlan(t store.Task) bool {
	return t.PlanFirst && (strings.TrimSpace(t.PlanMarkdown) == "" || t.PlanRevision != "")
}

// planTask runs a planning run: it claims the queued task, asks the model
// for a plan and leaves the task in planReview, or ends it.
func (o *Orchestrator) planTask(r *run) {
	defer o.endRun(r)
	log := o.cfg.Log.With("task", r.id)
	t, err := o.update(r.id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusQueued || !needsPlan(*t) {
				return errdefs.Conflictf("task %s is %s, not queued for a plan", t.ID, t.Status)
			}
			t.Status, t.StatusReason = store.StatusPlanning, reasonPlanning
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusPlanning, "Asking the model for a plan")},
	})
	if err != nil {
		if !errors.Is(err, errdefs.ErrConflict) && !errors.Is(err, errdefs.ErrNotFound) {
			log.Error("claim task for planning", "err", err)
		}
		return
	}
	plan, out := o.writePlan(r, t)
	revising := t.PlanRevision != ""
	if plan != "" {
		said := "Proposed a plan"
		if revising {
			said = "Rewrote the plan as the user asked"
		}
		_, err := o.update(r.id, store.Update{
			Mutate: func(t *store.Task) error {
				if t.Status != store.StatusPlanning {
					return errdefs.Conflictf("task %s is %s, no longer planning", t.ID, t.Status)
				}
				t.PlanMarkdown, t.PlanRevision, t.Status, t.StatusReason = plan, "", store.StatusPlanReview, reasonPlanReview
				return nil
			},
			Events: []store.Event{
				{Type: "llm_response", ActivityType: "llm_response", Summary: said, Details: plan},
				statusEvent(store.StatusPlanReview, "Waiting for the user to approve the plan"),
			},
		})
		if err == nil || errors.Is(err, errdefs.ErrConflict) || errors.Is(err, errdefs.ErrNotFound) {
			log.Info("plan ready for review", "err", err)
			return
		}
		out = outcome{status: store.StatusPlanFailed, summary: "Could not save the plan: " + err.Error()}
	}
	if revising && out.status == store.StatusPlanFailed {
		// The plan the user had stays under review.
		if err := o.revisionFailed(r.id, out.summary); err != nil {
			log.Error("keep the plan under review after a failed revision", "err", err)
		}
		return
	}
	if out.status == store.StatusFailed && errors.Is(context.Cause(r.ctx), errShutdown) {
		// Nothing is lost by planning again: the task goes back to the queue.
		if _, err := o.requeuePlanning(background(), r.id, "the helper stopped while the plan was written; it is written again at the next start"); err != nil {
			log.Error("queue the task to plan again", "err", err)
		}
		return
	}
	if err := o.recordEnd(r.id, out); err != nil {
		log.Error("record the end of planning", "err", err)
	}
	log.Info("planning ended", "status", out.status, "summary", out.summary)
}

// writePlan asks the model for the task's plan. It returns the plan, or
// the outcome that ends the task.
func (o *Orchestrator) writePlan(r *run, t store.Task) (string, outcome) {
	ctx := r.ctx
	planFailed := func(summary string) (string, outcome) {
		return "", outcome{status: store.StatusPlanFailed, summary: summary}
	}
	interrupted := func() (string, outcome) {
		return "", stopped(ctx, &outcome{summary: "Planning cancelled by the user."})
	}
	client, err := o.llmFor(ctx, t, o.cfg.Settings())
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		return planFailed("Could not make a plan: " + err.Error())
	}
	msgs := []llm.Message{llm.UserText("Task: " + t.Description)}
	if t.PlanRevision != "" {
		msgs = append(msgs, llm.AssistantText(t.PlanMarkdown), llm.UserText(fmt.Sprintf(revisePrompt, t.PlanRevision)))
	}
	// The plan streams to watchers as it is written (LiveAnswer).
	live := func(d llm.Delta) {
		r.live.add(agent.Live{Restart: d.Restart, Text: d.Text, Reasoning: d.Reasoning}, func() { o.hub.notify(r.id) })
	}
	reply, err := client.CompleteStream(ctx, llm.Request{System: planPrompt, Messages: msgs}, live)
	r.live.clear()
	if ctx.Err() != nil {
		return interrupted()
	}
	if err != nil {
		return planFailed("Could not make a plan: " + err.Error())
	}
	// The plan is the model's words, shown in terminals and pages: line
	// breaks stay, control characters go.
	plan := strings.TrimSpace(files.PrintableText(reply.Text))
	if plan != "" {
		return plan, outcome{}
	}
	if len(reply.ToolCalls) > 0 {
		names := make([]string, len(reply.ToolCalls))
		for i, c := range reply.ToolCalls {
			names[i] = files.Printable(c.Name)
		}
		return planFailed(fmt.Sprintf("The model answered the plan request with a tool call (%s) instead of a plan.", strings.Join(names, ", ")))
	}
	return planFailed("The model returned an empty plan.")
}

// revisionFailed puts a task whose plan could not be rewritten back under
// review, its plan as it was, and says why.
func (o *Orchestrator) revisionFailed(id, why string) error {
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusPlanning {
				return errdefs.Conflictf("task %s is %s, no longer planning", t.ID, t.Status)
			}
			t.PlanRevision, t.Status, t.StatusReason = "", store.StatusPlanReview, "the plan could not be rewritten: "+why
			return nil
		},
		Events: []store.Event{{Type: "status_change", ActivityType: "error", Status: string(store.StatusPlanReview),
			Summary: "The plan could not be rewritten; it stays as it was: " + why}},
	})
	if errors.Is(err, errdefs.ErrConflict) || errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	return err
}

// requeuePlanning puts a task that was planning back in the queue, to be
// planned again.
func (o *Orchestrator) requeuePlanning(ctx context.Context, id, why string) (store.Task, error) {
	t, _, err := o.cfg.Store.UpdateTask(ctx, id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusPlanning {
				return errdefs.Conflictf("task %s is %s, not planning", id, t.Status)
			}
			t.Status, t.StatusReason = store.StatusQueued, why
			return nil
		},
		Events: []store.Event{statusEvent(store.StatusQueued, "Queued to plan again: "+why)},
	})
	if err == nil {
		o.hub.notify(id)
	}
	return t, err
}

// Plan approves, edits, revises or cancels a task's plan. approve_plan,
// edit_plan and revise_plan need a plan under review (planReview);
// edit_plan replaces it with text when that is not blank; both queue the
// task to run with the plan. revise_plan queues it for the model to
// rewrite the plan as text asks. cancel_plan cancels a task that is
// planning (the model call is interrupted) or whose plan is under review.
func (o *Orchestrator) Plan(ctx context.Context, id, action, text string) error {
	switch action {
	case wire.ActionApprovePlan, wire.ActionEditPlan:
		return o.approvePlan(id, action, text)
	case wire.ActionRevisePlan:
		return o.revisePlan(id, text)
	case wire.ActionCancelPlan:
		return o.cancelPlan(ctx, id)
	}
	return errdefs.Invalidf("unknown plan action %q: want approve_plan, edit_plan, revise_plan or cancel_plan", action)
}

// revisePlan queues a task whose plan is under review for the model to
// rewrite it as the user asks.
func (o *Orchestrator) revisePlan(id, words string) error {
	words = strings.TrimSpace(files.PrintableText(words))
	switch {
	case words == "":
		return errdefs.Invalidf("revise_plan needs instructions: say what to change in the plan")
	case len(words) > maxRevision:
		return errdefs.Invalidf("instructions are %d bytes, over the limit of %d", len(words), maxRevision)
	}
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusPlanReview {
				return errdefs.Conflictf("cannot revise the plan of task %s: it is %s, not waiting for plan review", id, t.Status)
			}
			t.PlanRevision, t.Status, t.StatusReason = words, store.StatusQueued, "the plan is rewritten as you asked"
			return nil
		},
		Events: []store.Event{{Type: "status_change", ActivityType: "user_answer", Status: string(store.StatusQueued),
			Summary: "The user asked for changes to the plan", Details: words}},
	})
	if err != nil {
		return err
	}
	o.Kick()
	return nil
}

func (o *Orchestrator) approvePlan(id, action, markdown string) error {
	edited := action == wire.ActionEditPlan && strings.TrimSpace(markdown) != ""
	ev := statusEvent(store.StatusQueued, "Plan approved; waiting for a VM")
	if edited {
		markdown = strings.TrimSpace(files.PrintableText(markdown))
		ev = store.Event{Type: "status_change", ActivityType: "user_answer", Status: string(store.StatusQueued),
			Summary: "The user edited and approved the plan; waiting for a VM", Details: markdown}
	}
	verb := "approve"
	if action == wire.ActionEditPlan {
		verb = "edit"
	}
	_, err := o.update(id, store.Update{
		Mutate: func(t *store.Task) error {
			if t.Status != store.StatusPlanReview {
				return errdefs.Conflictf("cannot %s the plan of task %s: it is %s, not waiting for plan review", verb, id, t.Status)
			}
			if edited {
				t.PlanMarkdown = markdown
			}
			t.Status, t.StatusReason = store.StatusQueued, "plan approved"
			return nil
		},
		Events: []store.Event{ev},
	})
	if err != nil {
		return err
	}
	o.Kick()
	return nil
}

func (o *Orchestrator) cancelPlan(ctx context.Context, id string) error {
	stoppedRun := false
	if r, ok := o.activeRun(id); ok && r.planning {
		r.stop(errUserCancel)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		stoppedRun = true
	}
	// A plan that was written before the cancel reached the model call is
	// under review now: it is cancelled from there. So is a task queued to
	// be planned that no planning run has claimed yet.
	_, err := o.finishTask(ctx, id, outcome{status: store.StatusCancelled, summary: "Planning cancelled by the user.",
		only: func(t *store.Task) error {
			switch {
			case t.Status == store.StatusPlanReview, t.Status == store.StatusPlanning,
				t.Status == store.StatusQueued && needsPlan(*t):
				return nil
			}
			return errdefs.Conflictf("cannot cancel the plan of task %s: it is %s, not planning or waiting for plan review", id, t.Status)
		}}, nil)
	if errors.Is(err, errdefs.ErrConflict) && stoppedRun {
		if t, gerr := o.cfg.Store.GetTask(ctx, id); gerr == nil && t.Status == store.StatusCancelled {
			return nil // the planning run recorded the cancel
		}
	}
	return err
}
