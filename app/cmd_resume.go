package main

import (
	"flag"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdResume: hivecrew resume ID [--instructions TEXT] [--budget-usd USD]
// [--budget-tokens N] [--steps N] [--minutes M]
func cmdResume(e *env, args []string) error {
	fs := e.flags()
	instructions := fs.String("instructions", "", "new instructions `TEXT` for the agent as it resumes")
	steps := fs.Int("steps", 0, "for a task held at its step limit: continue for `N` more steps (default: its limit again)")
	minutes := fs.Float64("minutes", 0, "for a task held at its time limit: continue for `M` more minutes (default: its limit again)")
	var budget budgetFlags
	budget.register(fs)
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	a := wire.TaskAction{Action: wire.ActionResume, Instructions: *instructions}
	a.BudgetUSD, a.BudgetTokens = budget.values(fs)
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "steps":
			a.ExtraSteps = steps
		case "minutes":
			a.ExtraMinutes = minutes
		}
	})
	t, err := c.TaskAction(e.ctx, id, a)
	return e.printTaskState(t, inPlanState(e, c, id, "resume", err))
}
