package main

import (
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdVMs: hivecrew vms ls|stop|rm
func cmdVMs(e *env, args []string) error {
	return runTable(e, "vms", []command{
		{"ls", "", "list VMs", vmsLs},
		{"stop", "ID", "stop and remove a VM (its task fails)", vmsStop},
		{"rm", "ID", "stop and remove a VM", vmsRm},
	}, args)
}

func vmsLs(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	vms, err := c.VMs(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		if vms == nil {
			vms = []wire.VM{}
		}
		return e.printJSON(wire.VMList{VMs: vms})
	}
	if len(vms) == 0 {
		e.out("No VMs.")
		return nil
	}
	now := time.Now()
	tw := table(e.stdout, "ID", "STATE", "TASK", "TEMPLATE", "CPUS", "MEMORY", "NETWORK", "CREATED")
	for _, v := range vms {
		state := v.State
		if v.Reason != "" {
			state += " (" + v.Reason + ")"
		}
		task := "-"
		if v.TaskID != "" {
			task = shortID(v.TaskID)
			if v.TaskTitle != "" {
				task += " " + clip(oneLine(v.TaskTitle), 30)
			}
		}
		row(tw, v.ID, state, task, or(v.TemplateID, "-"), orDash(v.CPUCount, ""), orDash(v.MemoryMB, " MB"), or(v.Network, "-"), ago(v.CreatedAt, now))
	}
	return tw.Flush()
}

func vmsStop(e *env, args []string) error {
	pos, err := e.parseN(e.flags(), args, 1)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if err := c.StopVM(e.ctx, pos[0]); err != nil {
		return err
	}
	e.out("Stopped VM %s.", pos[0])
	return nil
}

func vmsRm(e *env, args []string) error {
	pos, err := e.parseN(e.flags(), args, 1)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if err := c.RemoveVM(e.ctx, pos[0]); err != nil {
		return err
	}
	e.out("Removed VM %s.", pos[0])
	return nil
}
