package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdPause: hivecrew pause ID
func cmdPause(e *env, args []string) error {
	c, id, err := e.oneTask(args, e.flags())
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionPause})
	return e.printTaskState(t, inPlanState(e, c, id, "pause", err))
}
