package main

import (
	"fmt"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdTemplates: hivecrew templates ls
func cmdTemplates(e *env, args []string) error {
	return runTable(e, "templates", []command{
		{"ls", "", "list VM templates", templatesLs},
	}, args)
}

func templatesLs(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (wire.TemplateList, error) {
		return c.Templates(e.ctx)
	}, func(l wire.TemplateList) error {
		return printTable(e, l.Templates, "No VM templates yet.",
			[]string{"ID", "NAME", "OS", "KIND", "CPUS", "MEMORY", "DISK", "DEFAULT"}, func(t wire.Template) []string {
				def := ""
				if t.IsDefault || t.ID == l.DefaultTemplateID {
					def = "yes"
				}
				return []string{t.ID, t.Name, t.OS, t.Kind, orDash(t.CPUCount, ""), orDash(t.MemoryMB, " MB"), orDash(t.DiskGB, " GB"), def}
			})
	})
}

// orDash formats n with a unit, or "-" for 0 (the default).
func orDash(n int, unit string) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n) + unit
}
