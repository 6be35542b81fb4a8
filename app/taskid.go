package main

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
)

// terminal says whether a task status is final.
func terminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "timedOut", "maxIterations", statusPlanFailed:
		return true
	}
	return false
}

// fullIDLen is the length of a task id (a UUID).
const fullIDLen = 36

// taskID resolves a task id or a unique prefix of one (as `ls` shows).
func (e *env) taskID(c *client.Client, id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", errdefs.Invalidf("a task id is required")
	}
	if len(id) >= fullIDLen {
		return id, nil
	}
	if _, err := c.Task(e.ctx, id); err == nil {
		return id, nil
	} else if !notFound(err) {
		return "", err
	}
	var found []string
	for offset := 0; ; {
		l, err := c.ListTasks(e.ctx, client.TaskQuery{Limit: 200, Offset: offset, Sort: "createdAt", Order: "desc"})
		if err != nil {
			return "", err
		}
		for _, t := range l.Tasks {
			if strings.HasPrefix(t.ID, id) {
				found = append(found, t.ID)
			}
		}
		offset += len(l.Tasks)
		if len(l.Tasks) == 0 || int64(offset) >= l.Total {
			break
		}
	}
	switch len(found) {
	case 0:
		return "", errdefs.NotFoundf("no task with id %s", id)
	case 1:
		return found[0], nil
	}
	return "", errdefs.Invalidf("task id %s is ambiguous: it starts %d tasks (%s)", id, len(found), strings.Join(short(found, 3), ", "))
}

// short lists up to n items and "…" for the rest.
func short(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("… %d more", len(items)-n))
}
