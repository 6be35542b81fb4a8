package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdResume: hivecrew resume ID [--instructions TEXT]
func cmdResume(e *env, args []string) error {
	fs := e.flags()
	instructions := fs.String("instructions", "", "new instructions `TEXT` for the agent as it resumes")
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionResume, Instructions: *instructions})
	return e.printTaskState(t, inPlanState(e, c, id, "resume", err))
}
