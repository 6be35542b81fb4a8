package main

// cmdSay: hivecrew say ID "<instructions>"
func cmdSay(e *env, args []string) error {
	c, id, text, err := e.taskAndText(args, `say needs a task id and instructions: hivecrew say ID "<instructions>"`)
	if err != nil {
		return err
	}
	if err := c.Instruct(e.ctx, id, text); err != nil {
		return inPlanState(e, c, id, "instruct", err)
	}
	e.out("Sent to task %s.", shortID(id))
	return nil
}
