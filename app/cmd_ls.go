package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// lsDefaultLimit is how many tasks ls shows without --limit or --all.
const lsDefaultLimit = 20

// apiMaxLimit is the largest page the API hands out.
const apiMaxLimit = 200

// cmdLs: hivecrew ls [--status S,S] [--limit N] [--all]
func cmdLs(e *env, args []string) error {
	fs := e.flags()
	status := fs.String("status", "", "only tasks with these `STATUSES` (comma-separated: queued,planReview,running,completed,...)")
	limit := fs.Int("limit", lsDefaultLimit, "show at most `N` tasks")
	all := fs.Bool("all", false, "show every task")
	if _, err := e.parseN(fs, args, 0); err != nil {
		return err
	}
	if *limit < 1 && !*all {
		return e.bad(fs, "--limit must be at least 1")
	}
	var statuses []string
	for _, s := range strings.Split(*status, ",") {
		if s = strings.TrimSpace(s); s != "" {
			statuses = append(statuses, s)
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	want := *limit
	if *all {
		want = 0
	}
	list, err := listTasks(e, c, statuses, want)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(list)
	}
	if len(list.Tasks) == 0 {
		if len(statuses) > 0 {
			e.out("No %s tasks.", strings.Join(statuses, " or "))
		} else {
			e.out(`No tasks yet: start one with hivecrew run "<task>".`)
		}
		return nil
	}
	now := time.Now()
	tw := table(e.stdout, "ID", "STATUS", "CREATED", "STEPS", "TITLE")
	for _, t := range list.Tasks {
		steps := "-"
		if t.StepCount != nil {
			steps = fmt.Sprint(*t.StepCount)
		}
		row(tw, shortID(t.ID), stateWords(t.Task), ago(t.CreatedAt, now), steps, clip(oneLine(or(t.Title, t.Description)), 60))
	}
	tw.Flush()
	if int64(len(list.Tasks)) < list.Total {
		e.out("(%d of %d tasks; --all shows all)", len(list.Tasks), list.Total)
	}
	return nil
}

// listTasks lists up to want tasks (0: all), newest first, page by page.
func listTasks(e *env, c *client.Client, statuses []string, want int) (wire.TaskList, error) {
	var out wire.TaskList
	for {
		page := apiMaxLimit
		if want > 0 {
			page = min(page, want-len(out.Tasks))
		}
		l, err := c.ListTasks(e.ctx, client.TaskQuery{Statuses: statuses, Limit: page, Offset: len(out.Tasks), Sort: "createdAt", Order: "desc"})
		if err != nil {
			return out, err
		}
		out.Tasks = append(out.Tasks, l.Tasks...)
		out.Total = l.Total
		if len(l.Tasks) == 0 || int64(len(out.Tasks)) >= l.Total || (want > 0 && len(out.Tasks) >= want) {
			break
		}
	}
	if out.Tasks == nil {
		out.Tasks = []wire.TaskSummary{}
	}
	out.Limit = len(out.Tasks)
	return out, nil
}
