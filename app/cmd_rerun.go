package main

import "github.com/hivecrew/hivecrew/core/wire"

// cmdRerun: hivecrew rerun ID [--provider P] [--model M] — prints the new
// task's id.
func cmdRerun(e *env, args []string) error {
	fs := e.flags()
	provider := fs.String("provider", "", "run it on `PROVIDER` instead (name or id; its default model unless --model)")
	model := fs.String("model", "", "run it on `MODEL` instead")
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return err
	}
	return e.printNewTask(c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionRerun, ProviderName: *provider, ModelID: *model}))
}

// cmdRename: hivecrew rename ID "<title>" — names a task (a generated
// title never replaces the name given).
func cmdRename(e *env, args []string) error {
	c, id, title, err := e.taskAndText(args, `rename needs a task and its new title: hivecrew rename ID "<title>"`)
	if err != nil {
		return err
	}
	return e.printTaskState(c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionRename, Title: title}))
}
