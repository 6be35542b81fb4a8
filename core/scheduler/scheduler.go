// Package scheduler fires the stored schedules: at each schedule's time
// it queues a task with the schedule's configuration and input files, and
// moves the schedule to its following run. (core/schedule is the timing
// itself: when a one-time or recurring schedule is next due.)
//
// It owns when schedules fire (Run, a loop that wakes at the next due run
// and at least once a minute, as a clock change or a sleeping host may
// move time under it), a run by hand (RunSchedule), and the conversion
// between a schedule and the task configuration POST /tasks takes. It
// needs from its caller the schedules' store (Store, which *store.Store
// satisfies) and the task queue as Tasks (the checks POST /tasks makes,
// staging and queueing a task: *orchestrator.Orchestrator is one, wired
// by the daemon). It guarantees that a run missed while the helper was
// down runs once, the next computed from now; that a run on time whose
// task no longer passes the checks (its provider or a folder gone) is
// recorded as a failed task with the reason, not lost in silence; and that
// a fire that fails leaves no task folder behind.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/schedule"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// maxWait is the longest Run sleeps without looking at schedules.
const maxWait = time.Minute

// Store keeps schedules; *store.Store is one.
type Store interface {
	GetSchedule(ctx context.Context, id string) (store.Schedule, error)
	ScheduleFiles(ctx context.Context, id string) ([]store.ScheduleFile, error)
	DueSchedules(ctx context.Context, now time.Time) ([]store.Schedule, error)
	NextScheduleRun(ctx context.Context) (*time.Time, error)
	// FireSchedule stores the task a schedule made, with its inputs, and
	// changes the schedule (mutate) in the same transaction.
	FireSchedule(ctx context.Context, id string, t *store.Task, inputs []store.TaskFile, mutate func(*store.Schedule) error) error
}

// Tasks is the task queue as the scheduler uses it: Check validates a
// task's configuration as POST /tasks does; Stage puts a checked task's
// input files in its folder (nothing is left on error), Discard removes
// that folder when the task was not stored, and Queued announces a stored
// task and wakes the dispatcher.
type Tasks interface {
	Check(ctx context.Context, in wire.CreateTask) (store.Task, error)
	Stage(taskID string, h evalhooks.Hooks, srcs []files.Source) ([]store.TaskFile, error)
	Discard(taskID string)
	Queued(taskID string)
}

// Config configures a Scheduler. Store, Tasks, Home and Log are required.
type Config struct {
	Store Store
	Tasks Tasks
	// Home is the data folder stored file paths are relative to.
	Home string
	Log  *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Scheduler fires schedules. It is safe for concurrent use.
type Scheduler struct {
	cfg  Config
	kick chan struct{} // wakes Run; buffered 1
}

// New returns a scheduler; call Run.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Tasks == nil || cfg.Home == "" || cfg.Log == nil {
		return nil, errors.New("scheduler: Store, Tasks, Home and Log are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scheduler{cfg: cfg, kick: make(chan struct{}, 1)}, nil
}

// Kick makes Run look at the schedules again (one was saved or changed).
func (s *Scheduler) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run fires due schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-timer.C:
		}
		timer.Reset(s.fireDue(ctx))
	}
}

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

// fireDue creates a task for every due schedule and returns how long to
// wait before looking again. A run missed while the helper was down runs
// once; the next run is computed from now.
func (s *Scheduler) fireDue(ctx context.Context) time.Duration {
	now := s.cfg.Now()
	due, err := s.cfg.Store.DueSchedules(ctx, now)
	if err != nil {
		s.cfg.Log.Error("read schedules", "err", err)
		return maxWait
	}
	for _, sc := range due {
		if _, err := s.fire(ctx, sc, now, true); err != nil {
			s.cfg.Log.Error("run schedule", "schedule", sc.ID, "err", err)
		}
	}
	next, err := s.cfg.Store.NextScheduleRun(ctx)
	if err != nil || next == nil {
		return maxWait
	}
	return min(max(next.Sub(s.cfg.Now()), 0), maxWait)
}

// RunSchedule creates a task from a schedule now, without moving its next run.
func (s *Scheduler) RunSchedule(ctx context.Context, id string) (store.Task, error) {
	sc, err := s.cfg.Store.GetSchedule(ctx, id)
	if err != nil {
		return store.Task{}, err
	}
	return s.fire(ctx, sc, s.cfg.Now(), false)
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
		Provisioning: sc.Provisioning.Wire(),
	}
}

// SetScheduleTask checks in as POST /tasks checks a new task and makes
// it the configuration of sc's tasks, kept as a task keeps it: the
// provider's name, its default model filled in, the output folder and
// host folders at their real paths, the provisioning checked.
func (s *Scheduler) SetScheduleTask(ctx context.Context, sc *store.Schedule, in wire.CreateTask) error {
	t, err := s.cfg.Tasks.Check(ctx, in)
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
func (s *Scheduler) fire(ctx context.Context, sc store.Schedule, now time.Time, advance bool) (store.Task, error) {
	t, err := s.cfg.Tasks.Check(ctx, ScheduleTask(sc))
	if err != nil && !advance {
		return store.Task{}, err
	}
	if err != nil {
		t = failedTask(sc, now, err)
	}
	t.Title = sc.Title
	sfiles, err := s.cfg.Store.ScheduleFiles(ctx, sc.ID)
	if err != nil {
		return store.Task{}, err
	}
	srcs := make([]files.Source, len(sfiles))
	for i, f := range sfiles {
		srcs[i] = files.Source{Name: f.Name, Path: filepath.Join(s.cfg.Home, f.Path), Mime: f.MimeType}
	}
	inputs, err := s.cfg.Tasks.Stage(t.ID, evalhooks.Hooks{}, srcs)
	if err != nil {
		return store.Task{}, err
	}
	spec, specErr := SpecOf(sc)
	err = s.cfg.Store.FireSchedule(ctx, sc.ID, &t, inputs, func(sc *store.Schedule) error {
		sc.LastRunAt = &now
		if !advance {
			return nil
		}
		if specErr != nil {
			sc.IsEnabled, sc.NextRunAt = false, nil
			return nil
		}
		var following time.Time
		var ok bool
		if sc.NextRunAt != nil {
			_, following, ok = spec.Due(*sc.NextRunAt, now)
		}
		if ok {
			sc.NextRunAt = &following
		} else {
			sc.IsEnabled, sc.NextRunAt = false, nil
		}
		return nil
	})
	if err != nil {
		s.cfg.Tasks.Discard(t.ID)
		return store.Task{}, err
	}
	s.cfg.Log.Info("schedule ran", "schedule", sc.ID, "task", t.ID)
	s.cfg.Tasks.Queued(t.ID)
	return t, nil
}

// failedTask is the task of a run on time that could not start: failed,
// with the reason, naming its provider and model as they were.
func failedTask(sc store.Schedule, now time.Time, err error) store.Task {
	ended := now.UTC()
	summary := files.PrintableText("The scheduled task could not start: " + err.Error())
	no := false
	t := store.Task{
		ID: uuid.NewString(), Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID,
		PlanFirst: sc.PlanFirst, Status: store.StatusFailed, CompletedAt: &ended, ResultSummary: &summary, WasSuccessful: &no,
	}
	if t.ProviderName == "" {
		t.ProviderName = "unknown"
	}
	if t.ModelID == "" {
		t.ModelID = "unknown"
	}
	return t
}
