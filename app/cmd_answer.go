package main

import (
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// cmdAnswer: hivecrew answer ID "<answer>"
func cmdAnswer(e *env, args []string) error {
	fs := e.flags()
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return e.bad(fs, `answer needs a task id and the answer: hivecrew answer ID "<answer>"`)
	}
	answer := strings.TrimSpace(strings.Join(pos[1:], " "))
	c, err := e.client()
	if err != nil {
		return err
	}
	id, err := e.taskID(c, pos[0])
	if err != nil {
		return err
	}
	q, err := c.Question(e.ctx, id)
	if err != nil {
		return err
	}
	if q == nil {
		return errdefs.Conflictf("task %s has no pending question", shortID(id))
	}
	if err := c.Answer(e.ctx, id, q.ID, answer); err != nil {
		return err
	}
	e.out("Answered %q: %s", q.Question, answer)
	return nil
}
