package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/schedule"
	"github.com/hivecrew/hivecrew/core/store"
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

// fire creates the schedule's task; advance moves the schedule to its
// following run (and disables a one-time schedule).
func (o *Orchestrator) fire(ctx context.Context, sc store.Schedule, now time.Time, advance bool) (store.Task, error) {
	t := store.Task{
		ID: uuid.NewString(), Title: sc.Title, Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID,
		OutputDirectory: sc.OutputDirectory, TemplateID: sc.TemplateID, TimeoutMinutes: sc.TimeoutMinutes,
		MaxIterations: sc.MaxIterations, NetworkMode: sc.NetworkMode, ToolPolicy: sc.ToolPolicy,
	}
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
