package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// TestSchedules: create (recurring and one-time, with files), list, get,
// edit, run now, delete, and the errors; a one-time schedule fires on time
// and disables itself; a run missed while the helper was down runs once
// when it starts again.
func TestSchedules(t *testing.T) {
	home, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(home)
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()

	daily := map[string]any{"title": "Morning report", "description": "Write the morning report",
		"schedule": map[string]any{"recurrence": map[string]any{"type": "daily", "hour": 9, "minute": 30}, "timeZone": "Europe/Berlin"}}
	var sc wire.Schedule
	json.Unmarshal(h.expect(201, "POST", "/api/v1/schedules", daily), &sc)
	if sc.ScheduleType != "recurring" || !sc.IsEnabled || sc.NextRunAt == nil || sc.Recurrence == nil || sc.Recurrence.Hour != 9 {
		t.Fatalf("schedule = %+v", sc)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if n := sc.NextRunAt.In(berlin); n.Hour() != 9 || n.Minute() != 30 || !n.After(time.Now()) || n.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("next run %s is not the next 09:30 in Berlin", n)
	}
	for name, bad := range map[string]map[string]any{
		"no timing":   {"description": "x", "schedule": map[string]any{}},
		"both":        {"description": "x", "schedule": map[string]any{"scheduledAt": time.Now().Add(time.Hour), "recurrence": map[string]any{"type": "daily"}}},
		"past":        {"description": "x", "schedule": map[string]any{"scheduledAt": time.Now().Add(-time.Hour)}},
		"hour 24":     {"description": "x", "schedule": map[string]any{"recurrence": map[string]any{"type": "daily", "hour": 24}}},
		"hourly":      {"description": "x", "schedule": map[string]any{"recurrence": map[string]any{"type": "hourly"}}},
		"weekly/none": {"description": "x", "schedule": map[string]any{"recurrence": map[string]any{"type": "weekly", "hour": 1}}},
		"zone":        {"description": "x", "schedule": map[string]any{"recurrence": map[string]any{"type": "daily"}, "timeZone": "Mars/Olympus"}},
		"provider":    {"description": "x", "providerName": "Nobody", "schedule": map[string]any{"recurrence": map[string]any{"type": "daily"}}},
	} {
		if code, out := h.req("POST", "/api/v1/schedules", bad); code != 400 {
			t.Errorf("%s: %d %s", name, code, out)
		}
	}
	var list wire.ScheduleList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/schedules?limit=10", nil), &list)
	if list.Total != 1 || len(list.Schedules) != 1 {
		t.Fatalf("list = %+v", list)
	}
	// As Swift: limit is clamped to 1..200, not refused.
	json.Unmarshal(h.expect(200, "GET", "/api/v1/schedules?limit=0", nil), &list)
	if list.Limit != 1 || len(list.Schedules) != 1 {
		t.Fatalf("limit=0: %+v", list)
	}
	h.expect(404, "GET", "/api/v1/schedules/nope", nil)
	var one wire.Schedule
	json.Unmarshal(h.expect(200, "GET", "/api/v1/schedules/"+sc.ID, nil), &one)
	if one.ID != sc.ID || one.TimeZone != "Europe/Berlin" || one.Title != "Morning report" {
		t.Fatalf("GET schedule = %+v", one)
	}
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/schedules/"+sc.ID, map[string]any{"isEnabled": false}), &sc)
	if sc.IsEnabled {
		t.Fatal("schedule still enabled")
	}
	var task wire.Task
	json.Unmarshal(h.expect(200, "POST", "/api/v1/schedules/"+sc.ID+"/run", nil), &task)
	if task.ScheduleID != sc.ID || task.Title != "Morning report" {
		t.Fatalf("run now = %+v", task)
	}
	h.waitTask(task.ID, "the scheduled task's end", terminal)
	h.expect(204, "DELETE", "/api/v1/schedules/"+sc.ID, nil)
	h.expect(404, "DELETE", "/api/v1/schedules/"+sc.ID, nil)
	if _, err := h.unix.Task(ctx, task.ID); err != nil {
		t.Fatalf("deleting the schedule deleted its task: %v", err)
	}

	// One-time, with a file: fires on time, once, and disables itself.
	f := h.paths.Home + "/brief.txt"
	os.WriteFile(f, []byte("brief"), 0o600)
	once, err := h.unix.CreateSchedule(ctx, wire.CreateSchedule{Description: "One shot", Schedule: &wire.When{ScheduledAt: ptr(time.Now().Add(500 * time.Millisecond))}}, f)
	if err != nil {
		t.Fatal(err)
	}
	if once.InputFileCount != 1 || once.ScheduleType != "one-time" {
		t.Fatalf("one-time schedule = %+v", once)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := h.unix.Schedules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Schedules[0].LastRunAt != nil {
			if s.Schedules[0].IsEnabled || s.Schedules[0].NextRunAt != nil {
				t.Fatalf("one-time schedule after its run: %+v", s.Schedules[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the one-time schedule did not run")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tasks, _ := h.unix.ListTasks(ctx, client.TaskQuery{Search: "One shot"})
	if tasks.Total != 1 || *tasks.Tasks[0].InputFileCount != 1 {
		t.Fatalf("tasks from the one-time schedule: %+v", tasks)
	}

	// Missed while down: runs once at the next start.
	h2 := startHelperAt(t, home, h.llm, nil)
	h2.addProvider()
	if _, err := h2.unix.CreateSchedule(ctx, wire.CreateSchedule{Description: "Missed one", Schedule: &wire.When{ScheduledAt: ptr(time.Now().Add(300 * time.Millisecond))}}); err != nil {
		t.Fatal(err)
	}
	h2.stop()
	time.Sleep(600 * time.Millisecond)
	h3 := startHelperAt(t, home, h.llm, nil)
	deadline = time.Now().Add(10 * time.Second)
	for {
		l, err := h3.unix.ListTasks(ctx, client.TaskQuery{Search: "Missed one"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Total == 1 {
			break
		}
		if l.Total > 1 || time.Now().After(deadline) {
			t.Fatalf("%d tasks for the missed run, want 1", l.Total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// TestScheduleOptions: a schedule keeps every option of the new-task form
// (plan first, folders, provisioning, limits, reasoning) and its tasks get
// them; PUT replaces the configuration (options left out go back to their
// defaults, the input files stay), PATCH changes only what it gives (an
// empty list clears one), a schedule whose provider is gone can still be
// turned off, refuses run now in words and, when it fires, leaves a failed
// task that says why.
func TestScheduleOptions(t *testing.T) {
	h := startHelper(t, nil)
	p := h.addProvider()
	ctx := context.Background()
	folder := t.TempDir()
	brief := filepath.Join(t.TempDir(), "brief.txt")
	os.WriteFile(brief, []byte("brief"), 0o600)
	in := wire.CreateSchedule{
		Title: "Tidy", Description: "Tidy the folder", PlanFirst: ptr(true), HostFolders: []string{folder},
		Provisioning: &wire.TaskProvisioning{Environment: map[string]string{"MODE": "quiet"}}, TimeoutMinutes: 20, MaxIterations: 30,
		ReasoningEffort: "low", NetworkMode: "offline", ToolPolicy: map[string]string{"run_shell": "ask"},
		Schedule: &wire.When{Recurrence: &wire.Recurrence{Type: "weekly", DaysOfWeek: []int{2}, Hour: 6, Minute: 0}},
	}
	sc, err := h.unix.CreateSchedule(ctx, in, brief)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(folder)
	if !sc.PlanFirst || !slices.Equal(sc.HostFolders, []string{real}) || sc.Provisioning == nil || sc.Provisioning.Environment["MODE"] != "quiet" ||
		sc.TimeoutMinutes != 20 || sc.MaxIterations != 30 || sc.ReasoningEffort == nil || *sc.ReasoningEffort != "low" ||
		sc.NetworkMode != "offline" || sc.ToolPolicy["run_shell"] != "ask" || sc.InputFileCount != 1 {
		t.Fatalf("schedule = %+v", sc)
	}
	var task wire.Task
	json.Unmarshal(h.expect(200, "POST", "/api/v1/schedules/"+sc.ID+"/run", nil), &task)
	got := h.waitTask(task.ID, "its plan", func(t wire.Task) bool { return t.Status == "planReview" })
	if !got.PlanFirst || len(got.HostFolders) != 1 || got.HostFolders[0].Path != real || got.TimeoutMinutes != 20 || got.MaxIterations != 30 ||
		got.ReasoningEffort == nil || *got.ReasoningEffort != "low" || got.ToolPolicy["run_shell"] != "ask" || got.Title != "Tidy" {
		t.Fatalf("the schedule's task = %+v", got)
	}
	h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "cancel_plan"})

	// PATCH: only what it gives; [] clears the folders.
	var patched wire.Schedule
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/schedules/"+sc.ID, map[string]any{"hostFolders": []string{}, "maxIterations": 40}), &patched)
	if len(patched.HostFolders) != 0 || patched.MaxIterations != 40 || !patched.PlanFirst || patched.TimeoutMinutes != 20 || patched.NextRunAt == nil ||
		!patched.NextRunAt.Equal(*sc.NextRunAt) {
		t.Fatalf("after PATCH: %+v", patched)
	}
	// PUT: the whole configuration; what it leaves out is the default.
	h.expect(400, "PUT", "/api/v1/schedules/"+sc.ID, map[string]any{"title": "No timing", "description": "x"})
	var put wire.Schedule
	json.Unmarshal(h.expect(200, "PUT", "/api/v1/schedules/"+sc.ID, map[string]any{"title": "Tidy daily", "description": "Tidy it daily",
		"schedule": map[string]any{"recurrence": map[string]any{"type": "daily", "hour": 7, "minute": 45}}}), &put)
	if put.Title != "Tidy daily" || put.PlanFirst || put.TimeoutMinutes != 0 || put.MaxIterations != 0 || put.Provisioning != nil ||
		put.ReasoningEffort != nil || put.ToolPolicy != nil || put.Recurrence == nil || put.Recurrence.Type != "daily" || put.Recurrence.Minute != 45 ||
		put.InputFileCount != 1 || !put.IsEnabled || put.LastRunAt == nil {
		t.Fatalf("after PUT: %+v", put)
	}
	h.expect(404, "PUT", "/api/v1/schedules/nope", map[string]any{"title": "x", "description": "x", "schedule": map[string]any{"recurrence": map[string]any{"type": "daily"}}})

	// Its provider gone: off still works, run now says why, a run on time
	// leaves a failed task with the reason.
	once, err := h.unix.CreateSchedule(ctx, wire.CreateSchedule{Title: "Soon", Description: "Soon", Schedule: &wire.When{ScheduledAt: ptr(time.Now().Add(1500 * time.Millisecond))}})
	if err != nil {
		t.Fatal(err)
	}
	h.expect(204, "DELETE", "/api/v1/providers/"+p.ID, nil)
	var off wire.Schedule
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/schedules/"+sc.ID, map[string]any{"isEnabled": false}), &off)
	if off.IsEnabled {
		t.Fatal("the schedule is still on")
	}
	if code, out := h.req("POST", "/api/v1/schedules/"+sc.ID+"/run", nil); code < 400 || !strings.Contains(string(out), "no LLM provider is configured") {
		t.Fatalf("run now without a provider: %d %s", code, out)
	}
	var fired client.TaskQuery
	fired.Search = "Soon"
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := h.unix.ListTasks(ctx, fired)
		if err != nil {
			t.Fatal(err)
		}
		if l.Total == 1 {
			ft := l.Tasks[0]
			if ft.Status != "failed" || ft.ResultSummary == nil || !strings.Contains(*ft.ResultSummary, "The scheduled task could not start: no LLM provider is configured") {
				t.Fatalf("the task of a schedule whose provider is gone: %+v", ft)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the one-time schedule %s did not run", once.ID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
