package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdRerun: hivecrew rerun ID — prints the new task's id.
func cmdRerun(e *env, args []string) error {
	return e.printNewTask(e.taskAction(args, wire.ActionRerun))
}
