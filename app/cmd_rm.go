package main

import (
	"errors"
	"fmt"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// cmdRm: hivecrew rm [--force] ID — delete a task with everything the
// helper keeps of it. A task that has not ended is refused unless --force,
// which cancels it first.
func cmdRm(e *env, args []string) error {
	fs := e.flags()
	force := fs.Bool("force", false, "cancel the task first if it has not ended (else it is refused)")
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	if err := c.DeleteTask(e.ctx, id, *force); err != nil {
		if errors.Is(err, errdefs.ErrConflict) {
			return fmt.Errorf("%w; `hivecrew rm --force %s` cancels and deletes it", err, shortID(id))
		}
		return err
	}
	if e.json {
		return e.printJSON(map[string]string{"deleted": id})
	}
	e.out("Deleted task %s (its activity, files and traces; copies in your output folder stay).", shortID(id))
	return nil
}
