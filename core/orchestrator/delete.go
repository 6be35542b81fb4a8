package orchestrator

import (
	"context"
	"errors"
	"os"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
)

// Delete deletes a task with everything the helper keeps of it: its
// activity, questions, permission requests and file records (through the
// database's foreign keys), its input and output copies, the trace folder
// of every session it had (a resumed run's too), and the same of each
// subagent it started, whose tasks are its work. Nothing is left of it,
// and no trace without its task. The copies of its outputs in the user's
// output folder are the user's and stay.
//
// A task or subagent that has not ended is refused (ErrConflict) unless
// cancel, which cancels it first as the Swift app's delete does.
func (o *Orchestrator) Delete(ctx context.Context, id string, cancel bool) error {
	tree, err := o.taskTree(ctx, id)
	if err != nil {
		return err
	}
	if !cancel {
		for _, t := range tree {
			_, running := o.activeRun(t.ID)
			if t.Status.Terminal() && !running {
				continue
			}
			if t.ID == id {
				return errdefs.Conflictf("task %s is %s: cancel it first (or delete with cancel)", id, t.Status)
			}
			return errdefs.Conflictf("task %s has a subagent that is %s (%s): cancel the task first (or delete with cancel)", id, t.Status, t.ID)
		}
	}
	for _, t := range tree {
		if err := o.stopRun(ctx, t.ID); err != nil {
			return err
		}
	}
	var sessions []string
	ids := make([]string, len(tree))
	for i, t := range tree {
		ids[i] = t.ID
		sids, err := o.cfg.Store.SessionIDs(ctx, t)
		if err != nil {
			return err
		}
		sessions = append(sessions, sids...)
	}
	if err := o.cfg.Store.DeleteTasks(ctx, ids); err != nil {
		return err
	}
	var errs []error
	for _, t := range tree {
		// A run that claimed the task meanwhile has nothing left to record.
		if err := o.stopRun(context.WithoutCancel(ctx), t.ID); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, os.RemoveAll(o.taskDir(t.ID)))
	}
	for _, sid := range sessions {
		errs = append(errs, os.RemoveAll(o.cfg.Paths.Session(sid)))
	}
	for _, id := range ids {
		o.hub.notify(id)
	}
	return errors.Join(errs...)
}

// taskTree is a task and the tasks of its subagents, theirs in turn,
// parents first.
func (o *Orchestrator) taskTree(ctx context.Context, id string) ([]store.Task, error) {
	t, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return nil, err
	}
	tree := []store.Task{t}
	seen := map[string]bool{id: true}
	for i := 0; i < len(tree); i++ {
		kids, err := o.cfg.Store.ChildTasks(ctx, tree[i].ID)
		if err != nil {
			return nil, err
		}
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				tree = append(tree, k)
			}
		}
	}
	return tree, nil
}

// stopRun cancels a task's run, if it has one, and waits for its end.
func (o *Orchestrator) stopRun(ctx context.Context, id string) error {
	r, ok := o.activeRun(id)
	if !ok {
		return nil
	}
	r.stop(errUserCancel)
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
