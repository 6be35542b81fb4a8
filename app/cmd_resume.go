package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdResume: hivecrew resume ID [--instructions TEXT] [--budget-usd USD] [--budget-tokens N]
func cmdResume(e *env, args []string) error {
	fs := e.flags()
	instructions := fs.String("instructions", "", "new instructions `TEXT` for the agent as it resumes")
	var budget budgetFlags
	budget.register(fs)
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	a := wire.TaskAction{Action: wire.ActionResume, Instructions: *instructions}
	a.BudgetUSD, a.BudgetTokens = budget.values(fs)
	t, err := c.TaskAction(e.ctx, id, a)
	return e.printTaskState(t, inPlanState(e, c, id, "resume", err))
}
