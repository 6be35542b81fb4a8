package orchestrator

import (
	"context"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// planDecision is the user's answer to a proposed plan.
type planDecision struct {
	action   string // approve_plan, edit_plan, cancel_plan
	markdown string
}

const planPrompt = `You plan tasks for an AI agent that operates a computer (screenshots, mouse, keyboard, files, shell) inside an isolated VM. Input files are in inbox/ of the shared folder; results go to outbox/. Write a short, numbered plan in Markdown: the steps the agent will take and what it will save to outbox/. Do not carry out the task.`

// planFirst asks the model for a plan and waits for the user to approve,
// edit or cancel it. It returns the approved plan, or the outcome that ends
// the task.
func (o *Orchestrator) planFirst(r *run, t store.Task, client *llm.Client) (string, outcome, bool) {
	ctx := r.ctx
	plan := t.PlanMarkdown
	if plan == "" {
		reply, err := client.Complete(ctx, []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: planPrompt},
			{Role: openai.ChatMessageRoleUser, Content: "Task: " + t.Description},
		}, nil)
		if err != nil {
			if ctx.Err() != nil {
				return "", stopped(ctx, nil), false
			}
			return "", failed("Could not make a plan: " + err.Error()), false
		}
		plan = strings.TrimSpace(reply.Text)
	}
	decisions := make(chan planDecision, 1)
	r.mu.Lock()
	r.plan = decisions
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.plan = nil
		r.mu.Unlock()
	}()
	if _, err := o.update(t.ID, store.Update{
		Mutate: func(t *store.Task) error {
			t.PlanMarkdown, t.Status, t.StatusReason = plan, store.StatusPaused, "waiting for plan approval"
			return nil
		},
		Events: []store.Event{
			{Type: "llm_response", ActivityType: "llm_response", Summary: "Proposed a plan", Details: plan},
			statusEvent(store.StatusPaused, "Waiting for the user to approve the plan"),
		},
	}); err != nil {
		return "", failed(err.Error()), false
	}
	for {
		select {
		case <-ctx.Done():
			return "", stopped(ctx, nil), false
		case d := <-decisions:
			switch d.action {
			case wire.ActionCancelPlan:
				return "", outcome{status: store.StatusCancelled, summary: "The plan was cancelled."}, false
			case wire.ActionEditPlan:
				plan = d.markdown
				if _, err := o.update(t.ID, store.Update{
					Mutate: func(t *store.Task) error { t.PlanMarkdown = plan; return nil },
					Events: []store.Event{{Type: "llm_request", ActivityType: "user_answer", Summary: "The user edited the plan", Details: plan}},
				}); err != nil {
					return "", failed(err.Error()), false
				}
			case wire.ActionApprovePlan:
				if _, err := o.update(t.ID, store.Update{
					Mutate: func(t *store.Task) error {
						t.Status, t.StatusReason = store.StatusWaitingForVM, "preparing a VM"
						return nil
					},
					Events: []store.Event{statusEvent(store.StatusWaitingForVM, "Plan approved; preparing a VM")},
				}); err != nil {
					return "", failed(err.Error()), false
				}
				return plan, outcome{}, true
			}
		}
	}
}

// Plan approves, edits or cancels a task's proposed plan.
func (o *Orchestrator) Plan(ctx context.Context, id, action, markdown string) error {
	r, ok := o.activeRun(id)
	var ch chan planDecision
	if ok {
		r.mu.Lock()
		ch = r.plan
		r.mu.Unlock()
	}
	if ch == nil {
		return errdefs.Conflictf("task %s has no plan waiting for approval", id)
	}
	if action == wire.ActionEditPlan && strings.TrimSpace(markdown) == "" {
		return errdefs.Invalidf("edit_plan needs planMarkdown")
	}
	select {
	case ch <- planDecision{action: action, markdown: markdown}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
