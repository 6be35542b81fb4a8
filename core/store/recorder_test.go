package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestUpdateTasksRollsBackOnlyTheOneThatFails: in one batch, an update
// whose Mutate refuses and one for a task that does not exist leave
// nothing behind, and the updates around them stand, in order.
func TestUpdateTasksRollsBackOnlyTheOneThatFails(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	a, b := newTask("a"), newTask("b")
	for _, task := range []*Task{a, b} {
		if err := s.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(summary string) []Event { return []Event{{Type: "tool_call_result", Summary: summary}} }
	errs := s.UpdateTasks(ctx, []TaskUpdate{
		{ID: a.ID, Update: Update{Events: ev("a1"), Mutate: func(t *Task) error { t.StepCount = 1; return nil }}},
		{ID: b.ID, Update: Update{Events: ev("b refused"), Mutate: func(t *Task) error {
			t.StepCount = 99
			return errdefs.Conflictf("task %s has ended", t.ID)
		}}},
		{ID: "nope", Update: Update{Events: ev("nowhere")}},
		{ID: a.ID, Update: Update{Events: ev("a2"), Mutate: func(t *Task) error { t.StepCount++; return nil }}},
		{ID: b.ID, Update: Update{Events: ev("b1")}},
	})
	if errs[0] != nil || !errors.Is(errs[1], errdefs.ErrConflict) || !errors.Is(errs[2], errdefs.ErrNotFound) || errs[3] != nil || errs[4] != nil {
		t.Fatalf("errors = %v", errs)
	}
	for id, want := range map[string][]string{a.ID: {"status_change", "a1", "a2"}, b.ID: {"status_change", "b1"}} {
		events, err := s.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, e := range events {
			if e.Seq != int64(i+1) {
				t.Fatalf("task %s: event %d has seq %d", id, i, e.Seq)
			}
			got = append(got, map[bool]string{true: e.Type, false: e.Summary}[e.Type == "status_change"])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("task %s events = %v, want %v", id, got, want)
		}
	}
	if got, _ := s.GetTask(ctx, a.ID); got.StepCount != 2 {
		t.Errorf("task a's steps = %d, want 2 (both mutations, in order)", got.StepCount)
	}
	if got, _ := s.GetTask(ctx, b.ID); got.StepCount != 0 {
		t.Errorf("task b's steps = %d: the refused mutation was written", got.StepCount)
	}
}

// TestRecorderWritesInOrderAndFlushWaits: many writers record at once;
// Flush returns only once a task's updates are in the store, every update
// is reported once, in each task's order, and Close writes what is left.
func TestRecorderWritesInOrderAndFlushWaits(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	var mu sync.Mutex
	reported := map[string]int{}
	r := s.NewRecorder(func(id string, err error) {
		if err != nil {
			t.Errorf("task %s: %v", id, err)
		}
		mu.Lock()
		reported[id]++
		mu.Unlock()
	})
	const tasks, each = 8, 200
	ids := make([]string, tasks)
	for i := range ids {
		task := newTask(fmt.Sprint("task ", i))
		if err := s.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
		ids[i] = task.ID
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for n := 1; n <= each; n++ {
				r.Record(id, Update{Events: []Event{{Type: "tool_call_result", Summary: fmt.Sprint(n)}},
					Mutate: func(t *Task) error { t.StepCount = n; return nil }})
			}
			r.Flush(id)
			got, err := s.GetTask(ctx, id)
			if err != nil || got.StepCount != each {
				t.Errorf("after Flush, task %s has %d steps (%v), want %d", id, got.StepCount, err, each)
			}
		})
	}
	wg.Wait()
	late := ids[0]
	r.Record(late, Update{Events: []Event{{Type: "tool_call_result", Summary: "last"}}})
	r.Close()
	for _, id := range ids {
		events, err := s.ListEvents(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := each + 1
		if id == late {
			want++
		}
		if len(events) != want {
			t.Fatalf("task %s has %d events, want %d", id, len(events), want)
		}
		for n, e := range events[1 : each+1] {
			if e.Summary != fmt.Sprint(n+1) {
				t.Fatalf("task %s: event %d says %q, want %d (out of order)", id, n+1, e.Summary, n+1)
			}
		}
		if mu.Lock(); reported[id] != want-1 {
			t.Errorf("task %s: %d updates reported, want %d", id, reported[id], want-1)
		}
		mu.Unlock()
	}
	// After Close a Record is written at once.
	r.Record(late, Update{Events: []Event{{Type: "tool_call_result", Summary: "after close"}}})
	if n, _ := s.CountEvents(ctx, late); n != each+3 {
		t.Fatalf("a Record after Close was not written: %d events", n)
	}
}
