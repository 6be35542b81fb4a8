package main

import "strings"

// cmdSay: hivecrew say ID "<instructions>"
func cmdSay(e *env, args []string) error {
	fs := e.flags()
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return e.bad(fs, `say needs a task id and instructions: hivecrew say ID "<instructions>"`)
	}
	text := strings.TrimSpace(strings.Join(pos[1:], " "))
	c, err := e.client()
	if err != nil {
		return err
	}
	id, err := e.taskID(c, pos[0])
	if err != nil {
		return err
	}
	if err := c.Instruct(e.ctx, id, text); err != nil {
		return err
	}
	e.out("Sent to task %s.", shortID(id))
	return nil
}
