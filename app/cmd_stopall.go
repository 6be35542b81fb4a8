package main

import "fmt"

// cmdStopAll: hivecrew stop-all — the kill switch.
func cmdStopAll(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	s, err := c.StopAll(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(s)
	}
	e.out("Stopped %s in %s.", plural(len(s.Stopped), "task"), fmt.Sprintf("%.0f ms", s.DurationMs))
	for _, id := range s.Stopped {
		e.out("  %s", id)
	}
	return nil
}
