package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestListTasks: status filter, search (with LIKE's wildcards taken
// literally), sort with unstarted tasks last, paging, file counts, and the
// FIFO order of the queue.
func TestListTasks(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	base := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	var ids []string
	for i, desc := range []string{"alpha 100% done", "beta report", "gamma_report", "delta"} {
		task := newTask(desc)
		task.CreatedAt = base // same instant: the queue falls back to insertion order
		if err := s.CreateTask(ctx, task, []TaskFile{{Name: "in.txt", Size: 1, Path: "x"}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
		if i < 2 {
			started := base.Add(time.Duration(i+1) * time.Minute)
			if _, _, err := s.UpdateTask(ctx, task.ID, Update{Mutate: func(t *Task) error {
				t.Status, t.StartedAt = StatusRunning, &started
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queue, err := s.TasksInStatus(ctx, StatusQueued)
	if err != nil || len(queue) != 2 || queue[0].ID != ids[2] || queue[1].ID != ids[3] {
		t.Fatalf("queue order = %v, %v", queue, err)
	}
	list, total, err := s.ListTasks(ctx, TaskQuery{Sort: SortStartedAt})
	if err != nil || total != 4 || list[0].ID != ids[1] || list[1].ID != ids[0] || list[0].InputFileCount != 1 {
		t.Fatalf("by startedAt desc: %v %d %v", list, total, err)
	}
	list, _, _ = s.ListTasks(ctx, TaskQuery{Sort: SortStartedAt, Asc: true})
	if list[0].ID != ids[0] || list[3].StartedAt != nil {
		t.Fatalf("by startedAt asc: unstarted tasks must come last")
	}
	for search, want := range map[string]int{"100%": 1, "%": 1, "_report": 1, "REPORT": 2, "zzz": 0} {
		if _, n, err := s.ListTasks(ctx, TaskQuery{Search: search}); err != nil || n != int64(want) {
			t.Errorf("search %q: %d, %v; want %d", search, n, err, want)
		}
	}
	if list, n, _ := s.ListTasks(ctx, TaskQuery{Statuses: []TaskStatus{StatusRunning}, Limit: 1, Offset: 1}); n != 2 || len(list) != 1 {
		t.Fatalf("paged running: %d of %d", len(list), n)
	}
	if _, _, err := s.ListTasks(ctx, TaskQuery{Sort: "title"}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("bad sort: %v", err)
	}
	if _, _, err := s.ListTasks(ctx, TaskQuery{Statuses: []TaskStatus{"done"}}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("bad status: %v", err)
	}
}

// TestUpdateTaskIsAtomic: a mutation that fails leaves the row, its files
// and its events as they were.
func TestUpdateTaskIsAtomic(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	task := newTask("x")
	if err := s.CreateTask(ctx, task, nil); err != nil {
		t.Fatal(err)
	}
	boom := errdefs.Conflictf("no")
	_, _, err := s.UpdateTask(ctx, task.ID, Update{
		Mutate: func(t *Task) error { t.Status = StatusFailed; return boom },
		Files:  []TaskFile{{Kind: FileOutput, Name: "o", Size: 1, Path: "o"}},
		Events: []Event{{Type: "status_change", Status: "failed"}},
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	got, _ := s.GetTask(ctx, task.ID)
	files, _ := s.TaskFiles(ctx, task.ID, FileOutput)
	events, _ := s.ListEvents(ctx, task.ID, 0, 0)
	if got.Status != StatusQueued || len(files) != 0 || len(events) != 1 {
		t.Fatalf("after a failed update: %s, %d files, %d events", got.Status, len(files), len(events))
	}
	if _, _, err := s.UpdateTask(ctx, "nope", Update{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

// TestProviderDefaults: the first provider is the default; a new default
// takes the flag; names are unique in any case; deleting the default
// passes the flag to the oldest remaining one.
func TestProviderDefaults(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	a := &Provider{DisplayName: "A", BaseURL: "https://a.example/v1"}
	b := &Provider{DisplayName: "B", BaseURL: "https://b.example/v1"}
	c := &Provider{DisplayName: "C", BaseURL: "https://c.example/v1", IsDefault: true}
	for _, p := range []*Provider{a, b, c} {
		if err := s.CreateProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateProvider(ctx, &Provider{DisplayName: "a", BaseURL: "https://x.example"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("duplicate name in another case: %v", err)
	}
	def, err := s.FindProvider(ctx, "")
	if err != nil || def.ID != c.ID {
		t.Fatalf("default = %+v, %v", def, err)
	}
	if p, err := s.FindProvider(ctx, "b"); err != nil || p.ID != b.ID {
		t.Fatalf("by name: %+v, %v", p, err)
	}
	if _, err := s.DeleteProvider(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if def, _ := s.FindProvider(ctx, ""); def.ID != a.ID {
		t.Fatalf("after deleting the default, default = %s, want the oldest (A)", def.DisplayName)
	}
	if _, err := s.UpdateProvider(ctx, a.ID, func(p *Provider) error { p.IsDefault = false; return nil }); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("unsetting the only default: %v", err)
	}
}

// TestPlanStatuses: the plan states are stored, filtered on and counted
// like any other; planFailed is terminal, planning and planReview are not.
func TestPlanStatuses(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	for _, st := range []TaskStatus{StatusPlanning, StatusPlanReview, StatusPlanFailed} {
		if !st.Valid() {
			t.Fatalf("%s is not a valid status", st)
		}
		task := newTask("plan " + string(st))
		task.PlanFirst = true
		if err := s.CreateTask(ctx, task, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.UpdateTask(ctx, task.ID, Update{Mutate: func(t *Task) error { t.Status = st; return nil }}); err != nil {
			t.Fatal(err)
		}
		if list, n, err := s.ListTasks(ctx, TaskQuery{Statuses: []TaskStatus{st}}); err != nil || n != 1 || list[0].ID != task.ID {
			t.Fatalf("filter on %s: %v %d %v", st, list, n, err)
		}
	}
	if StatusPlanning.Terminal() || StatusPlanReview.Terminal() || !StatusPlanFailed.Terminal() {
		t.Fatal("planning and planReview wait; planFailed is terminal")
	}
	counts, err := s.CountTasks(ctx)
	if err != nil || counts[StatusPlanning] != 1 || counts[StatusPlanReview] != 1 || counts[StatusPlanFailed] != 1 || counts[StatusQueued] != 0 {
		t.Fatalf("counts = %v, %v", counts, err)
	}
}
