package main

import "flag"

// cmdApprove: hivecrew approve ID
func cmdApprove(e *env, args []string) error { return respond(e, e.flags(), args, true) }

// respond approves or denies a task's pending permission request.
func respond(e *env, fs *flag.FlagSet, args []string, approved bool) error {
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	what := "deny a tool call of"
	if approved {
		what = approveToolCall
	}
	p, err := pending(e, id, "permission request", c.Permission)
	if err != nil {
		// `approve` is not how a plan is approved: say what is.
		return inPlanState(e, c, id, what, err)
	}
	if err := c.Respond(e.ctx, id, p.ID, approved); err != nil {
		return err
	}
	verb := "Denied"
	if approved {
		verb = "Approved"
	}
	e.out("%s %s for task %s.", verb, p.ToolName, shortID(id))
	return nil
}
