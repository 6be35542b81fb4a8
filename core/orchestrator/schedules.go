package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/schedule"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// maxScheduleWait is the longest the dispatcher sleeps without looking at
// schedules (a clock change or a sleeping host may move time under it).
const maxScheduleWait = time.Minute

// SpecOf returns a stored schedule's timing.
func SpecOf(sc store.Schedule) (schedule.Spec, error) {
	loc := time.Local
	if sc.TimeZone != "" {
		l, err := time.LoadLocation(sc.TimeZone)
		if err != nil {
			return schedule.Spec{}, fmt.Errorf("schedule %s: time zone %q: %w", sc.ID, sc.TimeZone, err)
		}
		loc = l
	}
	if sc.ScheduleType == "one-time" {
		return schedule.Spec{At: sc.ScheduledAt, Location: loc}, nil
	}
	return schedule.Spec{Location: loc, Recurrence: &schedule.Recurrence{
		Kind: schedule.Kind(sc.RecurrenceType), DaysOfWeek: sc.DaysOfWeek, DayOfMonth: sc.DayOfMonth, Hour: sc.Hour, Minute: sc.Minute,
	}}, nil
}

// fireSchedules creates a task for every due schedule and returns how long
// to wait before looking again. A run missed while the helper was down runs
// once; the next run is computed from now.
func (o *Orchestrator) fireSchedules(ctx context.Context) time.Duration {
	now := o.cfg.Now()
	due, err := o.cfg.Store.DueSchedules(ctx, now)
	if err != nil {
		o.cfg.Log.Error("read schedules", "err", err)
		return maxScheduleWait
	}
	for _, sc := range due {
		if _, err := o.fire(ctx, sc, now, true); err != nil {
			o.cfg.Log.Error("run schedule", "schedule", sc.ID, "err", err)
		}
	}
	next, err := o.cfg.Store.NextScheduleRun(ctx)
	if err != nil || next == nil {
		return maxScheduleWait
	}
	return min(max(next.Sub(o.cfg.Now()), 0), maxScheduleWait)
}

// RunSchedule creates a task from a schedule now, without moving its next run.
func (o *Orchestrator) RunSchedule(ctx context.Context, id string) (store.Task, error) {
	sc, err := o.cfg.Store.GetSchedule(ctx, id)
	if err != nil {
		return store.Task{}, err
	}
	return o.fire(ctx, sc, o.cfg.Now(), false)
}

// ScheduleTask is the configuration of the tasks a schedule starts, as
// POST /tasks takes it (without its files).
func ScheduleTask(sc store.Schedule) wire.CreateTask {
	return wire.CreateTask{
		Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID, OutputDirectory: sc.OutputDirectory,
		PlanFirst: sc.PlanFirst, ReasoningEnabled: sc.ReasoningEnabled, ReasoningEffort: sc.ReasoningEffort,
		TemplateID: sc.TemplateID, TimeoutMinutes: sc.TimeoutMinutes, MaxIterations: sc.MaxIterations,
		NetworkMode: sc.NetworkMode, ToolPolicy: maps.Clone(sc.ToolPolicy), AllowHosts: slices.Clone(sc.AllowHosts),
		BudgetUSD: sc.BudgetUSD, BudgetTokens: sc.BudgetTokens, HostFolders: slices.Clone(sc.HostFolders),
		Provisioning: TaskProvisioningJSON(sc.Provisioning),
	}
}

// SetScheduleTask checks in as POST /tasks checks a new task and makes
// it the configuration of sc's tasks, kept as a task keeps it: the
// provider's name, its default model filled in, the output folder and
// host folders at their real paths, the provisioning checked.
func (o *Orchestrator) SetScheduleTask(ctx context.Context, sc *store.Schedule, in wire.CreateTask) error {
	t, err := o.Check(ctx, in)
	if err != nil {
		return err
	}
	sc.Description, sc.ProviderName, sc.ModelID, sc.OutputDirectory = t.Description, t.ProviderName, t.ModelID, t.OutputDirectory
	sc.PlanFirst, sc.ReasoningEnabled, sc.ReasoningEffort = t.PlanFirst, t.ReasoningEnabled, t.ReasoningEffort
	sc.TemplateID, sc.TimeoutMinutes, sc.MaxIterations, sc.NetworkMode = t.TemplateID, t.TimeoutMinutes, t.MaxIterations, t.NetworkMode
	sc.ToolPolicy, sc.AllowHosts, sc.BudgetUSD, sc.BudgetTokens = t.ToolPolicy, t.AllowHosts, t.BudgetUSD, t.BudgetTokens
	sc.HostFolders = nil
	for _, f := range t.HostFolders {
		sc.HostFolders = append(sc.HostFolders, f.Path)
	}
	sc.Provisioning = t.Provisioning
	return nil
}

// fire creates the schedule's task; advance moves the schedule to its
// following run (and disables a one-time schedule). The task is checked
// as a new one is. Run now refuses one that no longer passes (its
// provider or a folder gone); a run on time creates it failed, with the
// reason, so the run is not lost in silence.
func (o *Orchestrator) fire(ctx context.Context, sc store.Schedule, now time.Time, advance bool) (store.Task, error) {
	t, err := o.Check(ctx, ScheduleTask(sc))
	if err != nil && !advance {
		return store.Task{}, err
	}
	if err != nil {
		ended := now.UTC()
		summary := files.PrintableText("The scheduled task could not start: " + err.Error())
		no := false
		t = store.Task{
			ID: uuid.NewString(), Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID,
			PlanFirst: sc.PlanFirst, Status: store.StatusFailed, CompletedAt: &ended, ResultSummary: &summary, WasSuccessful: &no,
		}
		// A task names its provider and model, as they were.
		t.ProviderName, t.ModelID = or(t.ProviderName, "unknown"), or(t.ModelID, "unknown")
	}
	t.Title = sc.Title
	sfiles, err := o.cfg.Store.ScheduleFiles(ctx, sc.ID)
	if err != nil {
		return store.Task{}, err
	}
	srcs := make([]inputSource, len(sfiles))
	for i, f := range sfiles {
		srcs[i] = inputSource{name: f.Name, path: filepath.Join(o.cfg.Paths.Home, f.Path), mime: f.MimeType}
	}
	inputs, err := o.stageInputs(t.ID, srcs, false)
	if err != nil {
		return store.Task{}, err
	}
	spec, specErr := SpecOf(sc)
	err = o.cfg.Store.FireSchedule(ctx, sc.ID, &t, inputs, func(s *store.Schedule) error {
		s.LastRunAt = &now
		if !advance {
			return nil
		}
		if specErr != nil {
			s.IsEnabled, s.NextRunAt = false, nil
			return nil
		}
		var following time.Time
		var ok bool
		if s.NextRunAt != nil {
			_, following, ok = spec.Due(*s.NextRunAt, now)
		}
		if ok {
			s.NextRunAt = &following
		} else {
			s.IsEnabled, s.NextRunAt = false, nil
		}
		return nil
	})
	if err != nil {
		os.RemoveAll(o.taskDir(t.ID))
		return store.Task{}, err
	}
	o.cfg.Log.Info("schedule ran", "schedule", sc.ID, "task", t.ID)
	o.Kick()
	return t, nil
}
