package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdRerun: hivecrew rerun ID — prints the new task's id.
func cmdRerun(e *env, args []string) error {
	c, id, err := e.oneTask(args, e.flags())
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionRerun})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	e.out("%s", t.ID)
	return nil
}
