package main

import "fmt"

// cmdTemplates: hivecrew templates ls
func cmdTemplates(e *env, args []string) error {
	return runTable(e, "templates", []command{
		{"ls", "", "list VM templates", templatesLs},
	}, args)
}

func templatesLs(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	l, err := c.Templates(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	if len(l.Templates) == 0 {
		e.out("No VM templates yet.")
		return nil
	}
	tw := table(e.stdout, "ID", "NAME", "OS", "KIND", "CPUS", "MEMORY", "DISK", "DEFAULT")
	for _, t := range l.Templates {
		def := ""
		if t.IsDefault || t.ID == l.DefaultTemplateID {
			def = "yes"
		}
		row(tw, t.ID, t.Name, t.OS, t.Kind, orDash(t.CPUCount, ""), orDash(t.MemoryMB, " MB"), orDash(t.DiskGB, " GB"), def)
	}
	return tw.Flush()
}

// orDash formats n with a unit, or "-" for 0 (the default).
func orDash(n int, unit string) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n) + unit
}
