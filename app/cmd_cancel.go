package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdCancel: hivecrew cancel ID
func cmdCancel(e *env, args []string) error {
	c, id, err := e.oneTask(args, e.flags())
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionCancel})
	if err != nil {
		return err
	}
	return e.printTaskState(t)
}
