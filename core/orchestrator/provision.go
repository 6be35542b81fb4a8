package orchestrator

import (
	"cmp"
	"time"

	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// provisionPlan is what a task's VMs are given before its agent works in
// them: the configured provisioning for its template, then the task's own.
func (o *Orchestrator) provisionPlan(t store.Task, tmpl store.Template) (provision.Plan, error) {
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
	return p, nil
}

// taskProvisioning checks a new task's own provisioning and returns it as
// the task keeps it (nil for none).
func taskProvisioning(in *wire.TaskProvisioning) (*store.TaskProvisioning, error) {
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

// TaskProvisioningJSON is a task's own provisioning as the API shows it.
func TaskProvisioningJSON(p *store.TaskProvisioning) *wire.TaskProvisioning {
	if p == nil {
		return nil
	}
	out := &wire.TaskProvisioning{Environment: p.Environment}
	for _, c := range p.SetupCommands {
		out.SetupCommands = append(out.SetupCommands, wire.SetupCommand{Command: c.Command, TimeoutSeconds: c.TimeoutSeconds})
	}
	return out
}
