package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
)

// Subagents (issue 19.5). spawn_subagent is a host tool the orchestrator
// makes: it starts a child task in a VM of its own and returns at once.
// The child's result reaches the parent as a report at the start of its
// next turn (Runner.Report), and the child's LLM use counts against the
// parent's budget (Runner.AddChildUsage). A parent that ends its turn without a
// tool call while children still work waits for them rather than being
// judged done without their results.

// Children are a task's subagents as the runner sees them.
type Children interface {
	// Running is how many of the task's subagents have not ended.
	Running() int
	// Wait returns when one of them ends, or ctx does.
	Wait(ctx context.Context)
}

// Report gives the model a subagent's result at the start of its next turn.
func (r *Runner) Report(text string) { r.ctl.report(text) }

// SubagentNews records, in the task's activity, news of one of its
// subagents (its start, its end, a message sent to it), filtered as
// every event is.
func (r *Runner) SubagentNews(id, summary string) {
	r.emit(r.Steps(), Event{Type: "subagent_update", ActivityType: "subagent", Summary: summary, Subagent: id})
}

// AddChildUsage counts a subagent's LLM use against the task's budget.
func (r *Runner) AddChildUsage(u llm.Usage) {
	r.mu.Lock()
	r.childUsage = r.childUsage.Add(u)
	r.mu.Unlock()
}

// Left is what is left of a task's limits and budget (0: no budget).
type Left struct {
	Time         time.Duration
	Steps        int
	BudgetUSD    float64
	BudgetTokens int64
}

// Limits returns what is left of the task's limits and budget.
func (r *Runner) Limits() Left {
	r.mu.Lock()
	defer r.mu.Unlock()
	used := r.usage.Add(r.childUsage)
	left := Left{Steps: r.task.MaxIterations - r.steps, Time: time.Until(r.deadline)}
	if r.deadline.IsZero() {
		left.Time = r.task.Timeout
	}
	if r.task.BudgetTokens > 0 {
		left.BudgetTokens = max(1, r.task.BudgetTokens-int64(used.Total))
	}
	if r.task.BudgetUSD > 0 {
		if cost, known := r.cfg.LLM.Cost(used); known {
			left.BudgetUSD = max(0.0001, r.task.BudgetUSD-cost)
		} else {
			left.BudgetUSD = r.task.BudgetUSD
		}
	}
	return left
}

// waitForChildren waits, when subagents still work, until one of them ends
// (or ctx does), and reports whether the turn is to be taken again: after
// a wait, or when results of subagents came in since the model last saw
// the screen.
func (r *Runner) waitForChildren(ctx context.Context, step int) bool {
	if r.cfg.Children == nil {
		return false
	}
	n := r.cfg.Children.Running()
	if n == 0 {
		// Those that ended since the last turn: their results first.
		return r.ctl.hasReports()
	}
	r.emit(step, Event{Type: "status_change", ActivityType: "info", Summary: fmt.Sprintf("Waiting for %d subagent(s) to finish", n)})
	r.cfg.Children.Wait(ctx)
	return true
}
