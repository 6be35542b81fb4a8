package agent

import (
	"context"
	"fmt"

	"github.com/hivecrew/hivecrew/core/store"
)

// Budgets (issue 17.8): a task's LLM use, in tokens and in estimated cost
// (the provider's price table; a model without prices is held to its token
// budget only), is checked before every request to the model. Once it
// reaches the budget the task pauses, saying so; it goes on when the user
// raises the budget and resumes (resuming without raising it pauses again
// at once).

// SetBudget changes the task's budget (0: none); a run paused by its budget
// then goes on when resumed.
func (r *Runner) SetBudget(usd float64, tokens int64) {
	r.mu.Lock()
	r.task.BudgetUSD, r.task.BudgetTokens = usd, tokens
	r.mu.Unlock()
}

// overBudget says how the task's LLM use passed its budget, "" when not.
func (r *Runner) overBudget() string {
	r.mu.Lock()
	usd, tokens, used := r.task.BudgetUSD, r.task.BudgetTokens, r.usage.Add(r.childUsage)
	r.mu.Unlock()
	if tokens > 0 && int64(used.Total) >= tokens {
		return fmt.Sprintf("token budget reached: %d of %d tokens used; raise the budget (budgetTokens) and resume", used.Total, tokens)
	}
	if usd > 0 {
		if cost, known := r.cfg.LLM.Cost(used); known && cost >= usd {
			return fmt.Sprintf("cost budget reached: $%.4f of $%.2f spent; raise the budget (budgetUSD) and resume", cost, usd)
		}
	}
	return ""
}

// withinBudget waits, paused, while the task's LLM use is past its budget.
func (r *Runner) withinBudget(ctx context.Context) error {
	for {
		reason := r.overBudget()
		if reason == "" {
			return nil
		}
		r.ctl.hold(reason)
		r.setStatus(store.StatusPaused, reason)
		if err := r.ctl.waitResumed(ctx); err != nil {
			return err
		}
	}
}
