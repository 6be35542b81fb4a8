package api

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/scheduler"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

func (a *API) scheduleJSON(sc store.Schedule, fs []store.ScheduleFile) wire.Schedule {
	w := wire.Schedule{
		ID: sc.ID, Title: sc.Title, Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID,
		OutputDirectory: sc.OutputDirectory, IsEnabled: sc.IsEnabled, ScheduleType: sc.ScheduleType,
		ScheduledAt: tsp(sc.ScheduledAt), TimeZone: sc.TimeZone, NextRunAt: tsp(sc.NextRunAt), LastRunAt: tsp(sc.LastRunAt),
		CreatedAt: ts(sc.CreatedAt), InputFiles: []wire.File{}, InputFileCount: len(fs), ReasoningEnabled: sc.ReasoningEnabled,
	}
	if sc.ReasoningEffort != "" {
		w.ReasoningEffort = &sc.ReasoningEffort
	}
	w.TemplateID, w.TimeoutMinutes, w.MaxIterations, w.NetworkMode = sc.TemplateID, sc.TimeoutMinutes, sc.MaxIterations, sc.NetworkMode
	w.ToolPolicy, w.PlanFirst, w.HostFolders, w.AllowHosts = sc.ToolPolicy, sc.PlanFirst, sc.HostFolders, sc.AllowHosts
	w.Provisioning, w.BudgetUSD, w.BudgetTokens = sc.Provisioning.Wire(), sc.BudgetUSD, sc.BudgetTokens
	if sc.ScheduleType == "recurring" {
		w.Recurrence = &wire.Recurrence{Type: sc.RecurrenceType, DaysOfWeek: sc.DaysOfWeek, DayOfMonth: sc.DayOfMonth, Hour: sc.Hour, Minute: sc.Minute}
	}
	for _, f := range fs {
		at := ts(f.CreatedAt)
		w.InputFiles = append(w.InputFiles, wire.File{Name: f.Name, Size: f.Size, MimeType: or(f.MimeType, files.MimeType(f.Name)), UploadedAt: &at})
	}
	return w
}

// applyWhen sets a schedule's timing from the wire and computes its next run.
func (a *API) applyWhen(sc *store.Schedule, when *wire.When) error {
	if when == nil {
		return errdefs.Invalidf("schedule is required: {scheduledAt} or {recurrence: {type, hour, minute, ...}}")
	}
	tz := when.TimeZone
	if tz == "" {
		tz = or(sc.TimeZone, localZone())
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return errdefs.Invalidf("schedule.timeZone %q: not an IANA time zone", tz)
	}
	sc.TimeZone = tz
	switch {
	case when.ScheduledAt != nil && when.Recurrence != nil:
		return errdefs.Invalidf("schedule: give scheduledAt or recurrence, not both")
	case when.ScheduledAt != nil:
		at := when.ScheduledAt.UTC()
		sc.ScheduleType, sc.ScheduledAt = "one-time", &at
		sc.RecurrenceType, sc.DaysOfWeek, sc.DayOfMonth, sc.Hour, sc.Minute = "", nil, 0, 0, 0
	case when.Recurrence != nil:
		rc := when.Recurrence
		sc.ScheduleType, sc.ScheduledAt = "recurring", nil
		sc.RecurrenceType, sc.DaysOfWeek, sc.DayOfMonth, sc.Hour, sc.Minute = rc.Type, rc.DaysOfWeek, rc.DayOfMonth, rc.Hour, rc.Minute
	default:
		return errdefs.Invalidf("schedule: give scheduledAt or recurrence")
	}
	spec, err := scheduler.SpecOf(*sc)
	if err != nil {
		return errdefs.Invalidf("%v", err)
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	sc.NextRunAt = nil
	if next, ok := spec.Next(time.Now()); ok {
		sc.NextRunAt = &next
	} else if sc.ScheduleType == "one-time" {
		return errdefs.Invalidf("schedule.scheduledAt %s is in the past", when.ScheduledAt.Format(time.RFC3339))
	}
	return nil
}

func localZone() string {
	if tz := os.Getenv("TZ"); tz != "" {
		return tz
	}
	if link, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(link, "zoneinfo/"); i >= 0 {
			return link[i+len("zoneinfo/"):]
		}
	}
	return "UTC"
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// scheduleTaskOf is the configuration of a schedule's tasks as a create
// or replace body gives it: every field, given or not.
func scheduleTaskOf(in wire.CreateSchedule) wire.CreateTask {
	return wire.CreateTask{
		Description: in.Description, ProviderName: in.ProviderName, ModelID: in.ModelID, OutputDirectory: in.OutputDirectory,
		PlanFirst: in.PlanFirst != nil && *in.PlanFirst, ReasoningEnabled: in.ReasoningEnabled, ReasoningEffort: in.ReasoningEffort,
		TemplateID: in.TemplateID, TimeoutMinutes: in.TimeoutMinutes, MaxIterations: in.MaxIterations, NetworkMode: in.NetworkMode,
		ToolPolicy: in.ToolPolicy, AllowHosts: in.AllowHosts, BudgetUSD: in.BudgetUSD, BudgetTokens: in.BudgetTokens,
		HostFolders: in.HostFolders, Provisioning: in.Provisioning,
	}
}

// patchTask is cur with the fields a PATCH gives: a string, number or
// pointer left out (empty, zero or null) is unchanged; a list or the
// provisioning given empty ([] or {}) is cleared.
func patchTask(cur wire.CreateTask, in wire.CreateSchedule) wire.CreateTask {
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&cur.Description, in.Description}, {&cur.ProviderName, in.ProviderName}, {&cur.ModelID, in.ModelID},
		{&cur.OutputDirectory, in.OutputDirectory}, {&cur.ReasoningEffort, in.ReasoningEffort}, {&cur.TemplateID, in.TemplateID},
		{&cur.NetworkMode, in.NetworkMode},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if in.TimeoutMinutes != 0 {
		cur.TimeoutMinutes = in.TimeoutMinutes
	}
	if in.MaxIterations != 0 {
		cur.MaxIterations = in.MaxIterations
	}
	if in.ReasoningEnabled != nil {
		cur.ReasoningEnabled = in.ReasoningEnabled
	}
	if in.PlanFirst != nil {
		cur.PlanFirst = *in.PlanFirst
	}
	if in.BudgetUSD != nil {
		cur.BudgetUSD = in.BudgetUSD
	}
	if in.BudgetTokens != nil {
		cur.BudgetTokens = in.BudgetTokens
	}
	if in.ToolPolicy != nil {
		cur.ToolPolicy = in.ToolPolicy
	}
	if in.HostFolders != nil {
		cur.HostFolders = in.HostFolders
	}
	if in.AllowHosts != nil {
		cur.AllowHosts = in.AllowHosts
	}
	if p := in.Provisioning; p != nil {
		cur.Provisioning = p
		if len(p.Environment) == 0 && len(p.SetupCommands) == 0 {
			cur.Provisioning = nil
		}
	}
	return cur
}

// scheduleFromForm reads a multipart POST /schedules in either form: the
// Swift server's (the task's fields as parts, and a "schedule" part with
// the timing as JSON), or one "schedule" part holding the whole JSON body.
func scheduleFromForm(w http.ResponseWriter, f form) (wire.CreateSchedule, error) {
	var in wire.CreateSchedule
	raw, err := f.one("schedule")
	if err != nil {
		return in, err
	}
	delete(f, "schedule")
	if len(f) == 0 {
		// One part: the JSON body, or only the timing (then the title and
		// the rest are missing, which is said below).
		var probe map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &probe) == nil && (probe["title"] != nil || probe["description"] != nil || probe["schedule"] != nil) {
			if err := decodeJSON(w, []byte(raw), &in); err != nil {
				return in, errdefs.Invalidf("schedule part: %v", err)
			}
			return in, nil
		}
	}
	task, err := taskFromForm(w, f, "title")
	if err != nil {
		return in, err
	}
	in.Title, _ = f.one("title")
	in.Description, in.ProviderName, in.ModelID, in.OutputDirectory = task.Description, task.ProviderName, task.ModelID, task.OutputDirectory
	in.ReasoningEnabled, in.ReasoningEffort, in.TemplateID, in.NetworkMode = task.ReasoningEnabled, task.ReasoningEffort, task.TemplateID, task.NetworkMode
	in.TimeoutMinutes, in.MaxIterations, in.ToolPolicy = task.TimeoutMinutes, task.MaxIterations, task.ToolPolicy
	in.PlanFirst, in.HostFolders, in.Provisioning = &task.PlanFirst, task.HostFolders, task.Provisioning
	in.AllowHosts, in.BudgetUSD, in.BudgetTokens = task.AllowHosts, task.BudgetUSD, task.BudgetTokens
	if raw == "" {
		return in, errdefs.Invalidf("schedule is required: a part with {\"scheduledAt\": ...} or {\"recurrence\": {...}}")
	}
	var when wire.When
	if err := decodeJSON(nil, []byte(raw), &when); err != nil {
		return in, errdefs.Invalidf("schedule part: %v", err)
	}
	in.Schedule = &when
	return in, nil
}

func (a *API) createSchedule(w http.ResponseWriter, r *http.Request) error {
	in, uploads, done, err := receive(a, w, r, scheduleFromForm)
	if err != nil {
		return err
	}
	defer done()
	if strings.TrimSpace(in.Title) == "" {
		return errdefs.Invalidf("title is required")
	}
	in = timingOf(in)
	if err := orchestrator.CheckReasoningEffort(in.ReasoningEffort); err != nil {
		return err
	}
	sc := store.Schedule{Title: strings.TrimSpace(in.Title), IsEnabled: in.IsEnabled == nil || *in.IsEnabled}
	if err := a.sched.SetScheduleTask(r.Context(), &sc, scheduleTaskOf(in)); err != nil {
		return err
	}
	if err := a.stepUpForTask(r, scheduler.ScheduleTask(sc)); err != nil {
		return err
	}
	if err := a.applyWhen(&sc, in.Schedule); err != nil {
		return err
	}
	dir := filepath.Join(a.cfg.Paths.Home, "Schedules")
	sfiles, err := a.stageScheduleFiles(&sc, dir, uploads)
	if err != nil {
		return err
	}
	if err := a.st.CreateSchedule(r.Context(), &sc, sfiles); err != nil {
		os.RemoveAll(filepath.Join(dir, sc.ID))
		return err
	}
	a.sched.Kick()
	return a.writeSchedule(w, r, http.StatusCreated, sc.ID)
}

// stageScheduleFiles moves uploads into the schedule's folder.
func (a *API) stageScheduleFiles(sc *store.Schedule, dir string, uploads []files.Source) ([]store.ScheduleFile, error) {
	if len(uploads) == 0 {
		return nil, nil
	}
	if sc.ID == "" {
		sc.ID = newScheduleID()
	}
	fdir := filepath.Join(dir, sc.ID)
	if err := os.MkdirAll(fdir, 0o700); err != nil {
		return nil, fmt.Errorf("store schedule files: %w", err)
	}
	out := make([]store.ScheduleFile, 0, len(uploads))
	for _, u := range uploads {
		dst := filepath.Join(fdir, u.Name)
		if err := os.Rename(u.Path, dst); err != nil {
			os.RemoveAll(fdir)
			return nil, fmt.Errorf("store schedule file %s: %w", u.Name, err)
		}
		fi, err := os.Stat(dst)
		if err != nil {
			os.RemoveAll(fdir)
			return nil, fmt.Errorf("store schedule file %s: %w", u.Name, err)
		}
		rel, _ := filepath.Rel(a.cfg.Paths.Home, dst)
		out = append(out, store.ScheduleFile{Name: u.Name, Size: fi.Size(), MimeType: mime.TypeByExtension(filepath.Ext(u.Name)), Path: filepath.ToSlash(rel)})
	}
	return out, nil
}

func (a *API) writeSchedule(w http.ResponseWriter, r *http.Request, status int, id string) error {
	sc, err := a.st.GetSchedule(r.Context(), id)
	if err != nil {
		return err
	}
	fs, err := a.st.ScheduleFiles(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, status, a.scheduleJSON(sc, fs))
}

func (a *API) listSchedules(w http.ResponseWriter, r *http.Request) error {
	limit := clampParam(r, "limit", 50, 1, 200)
	offset := clampParam(r, "offset", 0, 0, 1<<31-1)
	list, total, err := a.st.ListSchedules(r.Context(), limit, offset)
	if err != nil {
		return err
	}
	out := wire.ScheduleList{Schedules: make([]wire.Schedule, len(list)), Total: total, Limit: limit, Offset: offset}
	for i, sc := range list {
		fs, err := a.st.ScheduleFiles(r.Context(), sc.ID)
		if err != nil {
			return err
		}
		out.Schedules[i] = a.scheduleJSON(sc, fs)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) getSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.writeSchedule(w, r, http.StatusOK, r.PathValue("id"))
}

// patchSchedule edits a schedule: fields given replace the stored ones.
func (a *API) patchSchedule(w http.ResponseWriter, r *http.Request) error {
	var in wire.CreateSchedule
	if err := decode(w, r, &in); err != nil {
		return err
	}
	return a.changeSchedule(w, r, timingOf(in), false)
}

// timingOf moves the timing given at the top level (as Swift's PATCH
// gives it) into schedule, where ours is.
func timingOf(in wire.CreateSchedule) wire.CreateSchedule {
	if in.Schedule == nil && (in.ScheduledAt != nil || in.Recurrence != nil) {
		in.Schedule = &wire.When{ScheduledAt: in.ScheduledAt, Recurrence: in.Recurrence}
	}
	return in
}

// replaceSchedule replaces a schedule's title, task configuration and
// timing (PUT): a field left out takes its default, as in a new
// schedule. isEnabled left out, the input files and the last run stay.
func (a *API) replaceSchedule(w http.ResponseWriter, r *http.Request) error {
	var in wire.CreateSchedule
	if err := decode(w, r, &in); err != nil {
		return err
	}
	in = timingOf(in)
	if strings.TrimSpace(in.Title) == "" {
		return errdefs.Invalidf("title is required")
	}
	if in.Schedule == nil {
		return errdefs.Invalidf("schedule is required: {scheduledAt} or {recurrence: {type, hour, minute, ...}}")
	}
	return a.changeSchedule(w, r, in, true)
}

// changeSchedule applies a PATCH (replace false) or a PUT (replace true):
// the new configuration is checked, and a stale web session asked for a
// fresh sign-in, before anything is written. Only what the request
// changes is written: a run that fires meanwhile keeps its last and next
// run unless the timing changes.
func (a *API) changeSchedule(w http.ResponseWriter, r *http.Request, in wire.CreateSchedule, replace bool) error {
	ctx, id := r.Context(), r.PathValue("id")
	if err := orchestrator.CheckReasoningEffort(in.ReasoningEffort); err != nil {
		return err
	}
	old, err := a.st.GetSchedule(ctx, id)
	if err != nil {
		return err
	}
	next := old
	task := scheduleTaskOf(in)
	if !replace {
		task = patchTask(scheduler.ScheduleTask(old), in)
	}
	// A patch that leaves the tasks' configuration as it is (turning a
	// schedule off, say) does not check it again: a schedule whose
	// provider is gone can still be turned off or retimed.
	if replace || !reflect.DeepEqual(task, scheduler.ScheduleTask(old)) {
		if err := a.sched.SetScheduleTask(ctx, &next, task); err != nil {
			return err
		}
	}
	if t := strings.TrimSpace(in.Title); t != "" {
		next.Title = t
	}
	if in.IsEnabled != nil {
		next.IsEnabled = *in.IsEnabled
	}
	timing := in.Schedule != nil || (next.IsEnabled && !old.IsEnabled)
	if in.Schedule != nil {
		if err := a.applyWhen(&next, in.Schedule); err != nil {
			return err
		}
	} else if timing {
		// Turned on again: the next run is computed from now.
		spec, err := scheduler.SpecOf(next)
		if err != nil {
			return errdefs.Invalidf("%v", err)
		}
		next.NextRunAt = nil
		if at, ok := spec.Next(time.Now()); ok {
			next.NextRunAt = &at
		}
	}
	if err := a.stepUpForScheduleChange(r, old, next); err != nil {
		return err
	}
	_, err = a.st.UpdateSchedule(ctx, id, func(sc *store.Schedule) error {
		keep := *sc
		*sc = next
		sc.LastRunAt, sc.CreatedAt = keep.LastRunAt, keep.CreatedAt
		if !timing {
			sc.NextRunAt = keep.NextRunAt
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.sched.Kick()
	return a.writeSchedule(w, r, http.StatusOK, id)
}

func (a *API) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := a.st.DeleteSchedule(r.Context(), id); err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(a.cfg.Paths.Home, "Schedules", id))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stepUpForScheduleChange asks a stale web session for a fresh sign-in
// when a change gives a schedule grants past Settings, or turns on a
// schedule that has them: its tasks would have them. Grants kept as they
// were need nothing.
func (a *API) stepUpForScheduleChange(r *http.Request, old, next store.Schedule) error {
	if !stale(r) {
		return nil
	}
	before, after := scheduler.ScheduleTask(old), scheduler.ScheduleTask(next)
	if sameGrants(before, after) && !(next.IsEnabled && !old.IsEnabled) {
		return nil
	}
	return a.stepUpForTask(r, after)
}

// runSchedule starts a schedule's task now; its grants need what a task's
// do.
func (a *API) runSchedule(w http.ResponseWriter, r *http.Request) error {
	if stale(r) {
		sc, err := a.st.GetSchedule(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		if err := a.stepUpForTask(r, scheduler.ScheduleTask(sc)); err != nil {
			return err
		}
	}
	t, err := a.sched.RunSchedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return a.writeCreated(w, r, http.StatusOK, t)
}

func newScheduleID() string { return uuid.NewString() }
