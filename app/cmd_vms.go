package main

import (
	"context"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdVMs: hivecrew vms ls|open|stop|rm|rebuild
func cmdVMs(e *env, args []string) error {
	return runTable(e, "vms", []command{
		{"ls", "", "list VMs", vmsLs},
		{"open", "TEMPLATE", "boot a developer VM of a template: no agent, yours by hand in the web UI until vms rm", vmsOpen},
		{"stop", "ID", "stop and remove a VM (its task fails)", remover((*client.Client).StopVM, "Stopped VM %s.")},
		{"rm", "ID", "stop and remove a VM", remover((*client.Client).RemoveVM, "Removed VM %s.")},
		{"rebuild", "ID", "replace an idle VM with a fresh clone of its template", remover((*client.Client).RebuildVM, "VM %s removed; the warm pool boots a fresh clone of its template.")},
	}, args)
}

func vmsLs(e *env, args []string) error {
	return listing[wire.VMList, wire.VM]{
		get: func(c *client.Client, ctx context.Context) (wire.VMList, error) {
			vms, err := c.VMs(ctx)
			return wire.VMList{VMs: nonNil(vms)}, err
		},
		items:  func(l wire.VMList) []wire.VM { return l.VMs },
		none:   "No VMs.",
		header: []string{"ID", "STATE", "TASK", "TEMPLATE", "CPUS", "MEMORY", "NETWORK", "CAPPED", "AGENT", "CREATED"},
		cells: func(v wire.VM) []string {
			state := v.State
			if v.Reason != "" {
				state += " (" + v.Reason + ")"
			}
			task := "-"
			if v.Developer {
				task = "developer VM"
			}
			if v.TaskID != "" {
				task = shortID(v.TaskID)
				if v.TaskTitle != "" {
					task += " " + clip(oneLine(v.TaskTitle), 30)
				}
			}
			return []string{v.ID, state, task, or(v.TemplateID, "-"), orDash(v.CPUCount, ""), orDash(v.MemoryMB, " MB"), or(v.Network, "-"), capped(v.Limits), agentCell(v.AgentVersion, v.AgentOutdated), ago(v.CreatedAt, time.Now())}
		},
	}.run(e, args)
}

func vmsOpen(e *env, args []string) error {
	c, id, err := e.connectTemplate(args)
	if err != nil {
		return err
	}
	v, err := c.OpenVM(e.ctx, id)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(v)
	}
	e.out("Developer VM %s of template %s is running (no agent). Use it in the web UI (hivecrew open): Environments, View.", v.ID, v.TemplateID)
	e.out("It holds a VM slot until you remove it: hivecrew vms rm %s", v.ID)
	return nil
}

// capped names the resources the host caps for a VM ("procs mem cpu uid";
// "none" when nothing is, "-" before its first start); `vms ls --json`
// gives the mechanism and the cap of each.
func capped(l *wire.VMLimits) string {
	if l == nil {
		return "-"
	}
	var out []string
	for _, f := range []struct{ name, v string }{{"procs", l.Processes}, {"mem", l.Memory}, {"cpu", l.CPU}, {"disk", l.Disk}} {
		if f.v != "" {
			out = append(out, f.name)
		}
	}
	if strings.HasPrefix(l.UID, "per-VM") {
		out = append(out, "uid")
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}
