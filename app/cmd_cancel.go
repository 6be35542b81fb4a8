package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdCancel: hivecrew cancel ID
func cmdCancel(e *env, args []string) error {
	return e.printTaskState(e.taskAction(args, wire.ActionCancel))
}
