package main

// cmdAnswer: hivecrew answer ID "<answer>"
func cmdAnswer(e *env, args []string) error {
	c, id, answer, err := e.taskAndText(args, `answer needs a task id and the answer: hivecrew answer ID "<answer>"`)
	if err != nil {
		return err
	}
	q, err := pending(e, id, "question", c.Question)
	if err != nil {
		return inPlanState(e, c, id, "answer", err)
	}
	if err := c.Answer(e.ctx, id, q.ID, answer); err != nil {
		return err
	}
	e.out("Answered %q: %s", q.Question, answer)
	return nil
}
