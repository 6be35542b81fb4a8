package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdPause: hivecrew pause ID
func cmdPause(e *env, args []string) error {
	return e.printTaskState(e.taskAction(args, wire.ActionPause))
}
