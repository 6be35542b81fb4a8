package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Trace retention (Settings.TraceRetentionDays): a trace is what a session
// records of the screen and the agent's work, Sessions/<id>/ (events.jsonl,
// screenshots/, artifacts/ with the collected outbox). It is what grows
// and what shows the user's screen, so that is what expires: once a task
// has ended more than N days ago, its sessions' folders are deleted and the
// task is marked TraceDeletedAt (its events lose their screenshot links).
// The task itself stays in the history with its result, activity text,
// costs and input files (so it can still be rerun); output files were
// delivered to the output directory and are not touched there. 0 days
// keeps traces until the user deletes the task.

// retentionBatch bounds the tasks one pass handles per query.
const retentionBatch = 200

// ApplyRetention deletes the traces of tasks that ended more than the
// retention period before now and returns how many tasks lost theirs.
func (o *Orchestrator) ApplyRetention(ctx context.Context, now time.Time) (int, error) {
	days := o.cfg.Settings().TraceRetentionDays
	if days <= 0 {
		return 0, nil
	}
	before := now.Add(-time.Duration(days) * 24 * time.Hour)
	n := 0
	for {
		traces, err := o.cfg.Store.TracesEndedBefore(ctx, before, retentionBatch)
		if err != nil {
			return n, err
		}
		for _, tr := range traces {
			if _, active := o.activeRun(tr.TaskID); active {
				continue
			}
			var errs []error
			for _, sid := range tr.SessionIDs {
				if sid == "" {
					continue
				}
				if err := os.RemoveAll(o.cfg.Paths.Session(sid)); err != nil {
					errs = append(errs, err)
				}
			}
			if err := errors.Join(errs...); err != nil {
				return n, fmt.Errorf("delete the trace of task %s: %w", tr.TaskID, err)
			}
			if err := o.cfg.Store.MarkTraceDeleted(ctx, tr.TaskID, now); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return n, err
			}
			o.hub.notify(tr.TaskID)
			n++
		}
		if len(traces) < retentionBatch {
			return n, nil
		}
	}
}

// RunRetention applies trace retention every interval until ctx ends
// (the helper applies it once at start itself, before it serves).
func (o *Orchestrator) RunRetention(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		o.logRetention(o.ApplyRetention(ctx, o.cfg.Now()))
	}
}

// ApplyRetentionNow applies trace retention once and logs what it did.
func (o *Orchestrator) ApplyRetentionNow(ctx context.Context) {
	o.logRetention(o.ApplyRetention(ctx, o.cfg.Now()))
}

func (o *Orchestrator) logRetention(n int, err error) {
	switch {
	case err != nil:
		o.cfg.Log.Error("trace retention", "err", err)
	case n > 0:
		o.cfg.Log.Info("trace retention deleted old traces", "tasks", n, "days", o.cfg.Settings().TraceRetentionDays)
	}
}
