package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
)

// cmdStatus: hivecrew status — whether the helper runs, and what it does.
// It never starts the helper.
func cmdStatus(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	paths, err := e.resolvePaths()
	if err != nil {
		return err
	}
	c := client.NewUnix(paths.Socket())
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	if err := c.Health(ctx); err != nil {
		return fmt.Errorf("the helper for %s is not running (any other command starts it): %w", paths.Home, err)
	}
	s, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(s)
	}
	// Plans hold no VM: the agent counts leave them out.
	plans := ""
	if l, err := c.ListTasks(ctx, client.TaskQuery{Statuses: []string{statusPlanning}, Limit: 1}); err == nil && l.Total > 0 {
		plans = fmt.Sprintf("%d being written", l.Total)
	}
	if l, err := c.ListTasks(ctx, client.TaskQuery{Statuses: []string{statusPlanReview}, Limit: 1}); err == nil && l.Total > 0 {
		plans = strings.TrimPrefix(plans+fmt.Sprintf(", %d waiting for your review (hivecrew ls --status planReview)", l.Total), ", ")
	}
	fields(e.stdout,
		field{"Helper", fmt.Sprintf("%s, version %s, up %s", s.Status, s.Version, clock(time.Duration(s.Uptime)*time.Second))},
		field{"Data", paths.Home},
		field{"Backend", s.Backend},
		field{"Agents", fmt.Sprintf("%d running, %d paused, %d queued (at most %d at once)", s.Agents.Running, s.Agents.Paused, s.Agents.Queued, s.Agents.MaxConcurrent)},
		field{"Plans", plans},
		field{"VMs", fmt.Sprintf("%d busy, %d starting, %d ready", s.VMs.Active, s.VMs.Pending, s.VMs.Available)},
	)
	return nil
}
