package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdPause: hivecrew pause ID
func cmdPause(e *env, args []string) error {
	c, id, err := e.oneTask(args, e.flags())
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionPause})
	if err != nil {
		return err
	}
	return e.printTaskState(t)
}

// printTaskState prints a task's id and status after an action (the task
// with --json).
func (e *env) printTaskState(t wire.Task) error {
	if e.json {
		return e.printJSON(t)
	}
	e.out("%s  %s", t.ID, t.Status)
	return nil
}
