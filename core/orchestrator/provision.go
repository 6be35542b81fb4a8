package orchestrator

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// provisionPlan is what a task's VMs are given before its agent works in
// them: the configured provisioning for its template, then the task's own
// (with its setupCommand, the last of its setup commands; legacy is the
// setupCommand of a task queued before it was kept there).
func (o *Orchestrator) provisionPlan(t store.Task, tmpl store.Template, legacy string) (provision.Plan, error) {
	var p provision.Plan
	if o.cfg.Provisioning != nil {
		var err error
		if p, err = o.cfg.Provisioning.Plan(tmpl.ID, tmpl.Name); err != nil {
			return p, err
		}
	}
	if tp := t.Provisioning; tp != nil {
		cmds := make([]provision.Command, len(tp.SetupCommands))
		for i, c := range tp.SetupCommands {
			cmds[i] = provision.Command{Command: c.Command, Timeout: cmp.Or(time.Duration(c.TimeoutSeconds)*time.Second, provision.DefaultTimeout)}
		}
		p = p.WithTask(tp.Environment, cmds)
	}
	if legacy != "" {
		p = p.WithTask(nil, []provision.Command{{Command: legacy, Timeout: evalhooks.SetupTimeout}})
	}
	return p, nil
}

// taskProvisioning checks a new task's own provisioning and returns it as
// the task keeps it (nil for none). A setupCommand (the evaluation
// harness's) is its last setup command, with 3 minutes to run.
func taskProvisioning(in *wire.TaskProvisioning, setupCommand string) (*store.TaskProvisioning, error) {
	if err := evalhooks.CheckCommand("setupCommand", setupCommand); err != nil {
		return nil, err
	}
	if strings.TrimSpace(setupCommand) != "" {
		var with wire.TaskProvisioning
		if in != nil {
			with = *in
		}
		with.SetupCommands = append(slices.Clone(with.SetupCommands), wire.SetupCommand{Command: setupCommand, TimeoutSeconds: int(evalhooks.SetupTimeout.Seconds())})
		in = &with
	}
	if in == nil {
		return nil, nil
	}
	p, err := provision.CheckTask(*in)
	if err != nil || (len(p.Environment) == 0 && len(p.SetupCommands) == 0) {
		return nil, err
	}
	out := &store.TaskProvisioning{Environment: p.Environment}
	for _, c := range p.SetupCommands {
		out.SetupCommands = append(out.SetupCommands, store.TaskSetupCommand{Command: c.Command, TimeoutSeconds: c.TimeoutSeconds})
	}
	return out, nil
}
