package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// tasks is the queue as the scheduler sees it: Check refuses what refuse
// says, and the rest is recorded.
type tasks struct {
	refuse error
	// mu guards queued and discarded.
	mu        sync.Mutex
	queued    []string
	discarded []string
}

func (q *tasks) Check(_ context.Context, in wire.CreateTask) (store.Task, error) {
	if q.refuse != nil {
		return store.Task{}, q.refuse
	}
	return store.Task{ID: uuid.NewString(), Description: in.Description, ProviderName: "P", ModelID: "m"}, nil
}

func (q *tasks) Stage(string, evalhooks.Hooks, []files.Source) ([]store.TaskFile, error) {
	return nil, nil
}

func (q *tasks) Discard(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.discarded = append(q.discarded, id)
}

func (q *tasks) Queued(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, id)
}

func newScheduler(t *testing.T, q *tasks, now time.Time) (*Scheduler, *store.Store) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "hivecrew.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Config{Store: st, Tasks: q, Home: t.TempDir(), Log: log, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// TestDueScheduleQueuesItsTask: a one-time schedule whose time has come
// queues its task, titled as the schedule, and is done (disabled, with
// its last run); a daily one moves to the next day.
func TestDueScheduleQueuesItsTask(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	q := &tasks{}
	s, st := newScheduler(t, q, now)
	ctx := context.Background()
	at := now.Add(-time.Minute)
	once := store.Schedule{Title: "Report", Description: "write the report", ProviderName: "P", ModelID: "m", IsEnabled: true,
		ScheduleType: "one-time", ScheduledAt: &at, NextRunAt: &at}
	daily := store.Schedule{Title: "Daily", Description: "tidy up", ProviderName: "P", ModelID: "m", IsEnabled: true,
		ScheduleType: "recurring", RecurrenceType: "daily", Hour: 9, Minute: 0, TimeZone: "UTC", NextRunAt: &at}
	for _, sc := range []*store.Schedule{&once, &daily} {
		if err := st.CreateSchedule(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
	}
	wait := s.fireDue(ctx)
	if len(q.queued) != 2 {
		t.Fatalf("queued %v; want the two schedules' tasks", q.queued)
	}
	if wait != maxWait {
		t.Errorf("waits %s with nothing due within it; want %s", wait, maxWait)
	}
	titles := map[string]bool{}
	for _, id := range q.queued {
		task, err := st.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		titles[task.Title] = task.Status == store.StatusQueued
	}
	if !titles["Report"] || !titles["Daily"] {
		t.Fatalf("tasks titled %v; want Report and Daily, queued", titles)
	}
	got, _ := st.GetSchedule(ctx, once.ID)
	if got.IsEnabled || got.NextRunAt != nil || got.LastRunAt == nil {
		t.Errorf("one-time schedule after its run: enabled %v, next %v, last %v", got.IsEnabled, got.NextRunAt, got.LastRunAt)
	}
	got, _ = st.GetSchedule(ctx, daily.ID)
	if want := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC); !got.IsEnabled || got.NextRunAt == nil || !got.NextRunAt.Equal(want) {
		t.Errorf("daily schedule's next run %v; want %v", got.NextRunAt, want)
	}
}

// TestScheduleThatNoLongerChecks: on time, a schedule whose task is
// refused (its provider gone) records a failed task with the reason; run
// by hand, it is refused and leaves no task and its next run alone.
func TestScheduleThatNoLongerChecks(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	q := &tasks{refuse: errdefs.Invalidf("providerName %q: no such provider", "Gone")}
	s, st := newScheduler(t, q, now)
	ctx := context.Background()
	at, later := now.Add(-time.Minute), now.Add(time.Hour)
	due := store.Schedule{Title: "Due", Description: "d", ProviderName: "Gone", IsEnabled: true, ScheduleType: "one-time", ScheduledAt: &at, NextRunAt: &at}
	byHand := store.Schedule{Title: "Later", Description: "l", ProviderName: "Gone", IsEnabled: true, ScheduleType: "one-time", ScheduledAt: &later, NextRunAt: &later}
	for _, sc := range []*store.Schedule{&due, &byHand} {
		if err := st.CreateSchedule(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
	}
	if wait := s.fireDue(ctx); wait != maxWait {
		t.Errorf("waits %s; want %s", wait, maxWait)
	}
	if len(q.queued) != 1 {
		t.Fatalf("tasks %v; want the failed run recorded", q.queued)
	}
	task, err := st.GetTask(ctx, q.queued[0])
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != store.StatusFailed || task.ResultSummary == nil || !strings.Contains(*task.ResultSummary, "could not start: providerName") || task.ModelID != "unknown" {
		t.Fatalf("failed run: %s, %v, model %q", task.Status, task.ResultSummary, task.ModelID)
	}
	if _, err := s.RunSchedule(ctx, byHand.ID); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("run by hand: %v; want the check's error", err)
	}
	got, _ := st.GetSchedule(ctx, byHand.ID)
	if len(q.queued) != 1 || got.LastRunAt != nil || got.NextRunAt == nil || !got.NextRunAt.Equal(later) {
		t.Fatalf("after a refused run by hand: tasks %v, last %v, next %v", q.queued, got.LastRunAt, got.NextRunAt)
	}
}
