package main

import (
	"fmt"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdLogs: hivecrew logs [-f] ID
func cmdLogs(e *env, args []string) error {
	fs := e.flags()
	follow := fs.Bool("f", false, "follow the activity until the task ends")
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	if *follow {
		_, err := watchTask(e.ctx, c, id, pollInterval, func(ev wire.Event) {
			if e.json {
				e.printJSONLine(ev)
				return
			}
			fmt.Fprintln(e.stdout, eventLine(ev))
		})
		return err
	}
	a, err := c.Activity(e.ctx, id, 0)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(a)
	}
	for _, ev := range a.Events {
		fmt.Fprintln(e.stdout, eventLine(ev))
	}
	return nil
}
