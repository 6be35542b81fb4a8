package main

import (
	"fmt"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdStopAll: hivecrew stop-all — the kill switch.
func cmdStopAll(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (wire.StopAll, error) {
		return c.StopAll(e.ctx)
	}, func(s wire.StopAll) error {
		e.out("Stopped %s in %s.", plural(len(s.Stopped), "task"), fmt.Sprintf("%.0f ms", s.DurationMs))
		for _, id := range s.Stopped {
			e.out("  %s", id)
		}
		return nil
	})
}
