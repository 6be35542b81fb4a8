package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/orchestrator"
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
	spec, err := orchestrator.SpecOf(*sc)
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

// checkTaskConfig validates a schedule's task configuration the way a new
// task's is validated, and normalises provider and model.
func (a *API) checkTaskConfig(r *http.Request, sc *store.Schedule) error {
	t, err := a.o.Check(r.Context(), wire.CreateTask{
		Description: sc.Description, ProviderName: sc.ProviderName, ModelID: sc.ModelID, OutputDirectory: sc.OutputDirectory,
		TemplateID: sc.TemplateID, TimeoutMinutes: sc.TimeoutMinutes, MaxIterations: sc.MaxIterations,
		NetworkMode: sc.NetworkMode, ToolPolicy: sc.ToolPolicy,
	})
	if err != nil {
		return err
	}
	sc.Description, sc.ProviderName, sc.ModelID, sc.OutputDirectory = t.Description, t.ProviderName, t.ModelID, t.OutputDirectory
	return nil
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
	var (
		in      wire.CreateSchedule
		uploads []orchestrator.Upload
	)
	rec, err := a.receive(w, r, &in)
	if err != nil {
		return err
	}
	if rec != nil {
		defer rec.cleanup()
		if in, err = scheduleFromForm(w, rec.form); err != nil {
			return err
		}
		uploads = rec.uploads
	}
	if strings.TrimSpace(in.Title) == "" {
		return errdefs.Invalidf("title is required")
	}
	if in.Schedule == nil && (in.ScheduledAt != nil || in.Recurrence != nil) {
		in.Schedule = &wire.When{ScheduledAt: in.ScheduledAt, Recurrence: in.Recurrence}
	}
	if err := orchestrator.CheckReasoningEffort(in.ReasoningEffort); err != nil {
		return err
	}
	sc := store.Schedule{
		ReasoningEnabled: in.ReasoningEnabled, ReasoningEffort: in.ReasoningEffort,
		Title: strings.TrimSpace(in.Title), Description: in.Description, ProviderName: in.ProviderName, ModelID: in.ModelID,
		OutputDirectory: in.OutputDirectory, IsEnabled: in.IsEnabled == nil || *in.IsEnabled, TemplateID: in.TemplateID,
		TimeoutMinutes: in.TimeoutMinutes, MaxIterations: in.MaxIterations, NetworkMode: in.NetworkMode, ToolPolicy: in.ToolPolicy,
	}
	if err := a.checkTaskConfig(r, &sc); err != nil {
		return err
	}
	if err := a.stepUpForTask(r, scheduleGrants(sc)); err != nil {
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
	a.o.Kick()
	return a.writeSchedule(w, r, http.StatusCreated, sc.ID)
}

// stageScheduleFiles moves uploads into the schedule's folder.
func (a *API) stageScheduleFiles(sc *store.Schedule, dir string, uploads []orchestrator.Upload) ([]store.ScheduleFile, error) {
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
	id := r.PathValue("id")
	var in wire.CreateSchedule
	if err := decode(w, r, &in); err != nil {
		return err
	}
	// Swift's PATCH gives the timing at the top level; ours in schedule.
	if in.Schedule == nil && (in.ScheduledAt != nil || in.Recurrence != nil) {
		in.Schedule = &wire.When{ScheduledAt: in.ScheduledAt, Recurrence: in.Recurrence}
	}
	if err := orchestrator.CheckReasoningEffort(in.ReasoningEffort); err != nil {
		return err
	}
	if err := a.stepUpForSchedulePatch(r, id, in); err != nil {
		return err
	}
	_, err := a.st.UpdateSchedule(r.Context(), id, func(sc *store.Schedule) error {
		if in.ReasoningEnabled != nil {
			sc.ReasoningEnabled = in.ReasoningEnabled
		}
		if in.ReasoningEffort != "" {
			sc.ReasoningEffort = in.ReasoningEffort
		}
		if in.Title != "" {
			sc.Title = strings.TrimSpace(in.Title)
		}
		if in.Description != "" {
			sc.Description = in.Description
		}
		if in.ProviderName != "" {
			sc.ProviderName = in.ProviderName
		}
		if in.ModelID != "" {
			sc.ModelID = in.ModelID
		}
		if in.OutputDirectory != "" {
			sc.OutputDirectory = in.OutputDirectory
		}
		if in.TemplateID != "" {
			sc.TemplateID = in.TemplateID
		}
		if in.TimeoutMinutes != 0 {
			sc.TimeoutMinutes = in.TimeoutMinutes
		}
		if in.MaxIterations != 0 {
			sc.MaxIterations = in.MaxIterations
		}
		if in.NetworkMode != "" {
			sc.NetworkMode = in.NetworkMode
		}
		if in.ToolPolicy != nil {
			sc.ToolPolicy = in.ToolPolicy
		}
		if err := a.checkTaskConfig(r, sc); err != nil {
			return err
		}
		if in.IsEnabled != nil {
			sc.IsEnabled = *in.IsEnabled
		}
		if in.Schedule != nil {
			return a.applyWhen(sc, in.Schedule)
		}
		if in.IsEnabled != nil && *in.IsEnabled {
			// Re-enabled: the next run is computed from now.
			spec, err := orchestrator.SpecOf(*sc)
			if err != nil {
				return errdefs.Invalidf("%v", err)
			}
			sc.NextRunAt = nil
			if next, ok := spec.Next(time.Now()); ok {
				sc.NextRunAt = &next
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.o.Kick()
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

// stepUpForSchedulePatch asks a stale web session for a fresh sign-in
// when a patch gives a schedule grants past Settings, or turns on a
// schedule that has them: its tasks would have them. Grants sent
// unchanged need nothing.
func (a *API) stepUpForSchedulePatch(r *http.Request, id string, in wire.CreateSchedule) error {
	if !stale(r) {
		return nil
	}
	old, err := a.st.GetSchedule(r.Context(), id)
	if err != nil {
		return err
	}
	next := old
	if in.OutputDirectory != "" {
		if next.OutputDirectory, err = a.o.OutputDir(in.OutputDirectory); err != nil {
			return err
		}
	}
	if in.NetworkMode != "" {
		next.NetworkMode = in.NetworkMode
	}
	if in.ToolPolicy != nil {
		next.ToolPolicy = in.ToolPolicy
	}
	changed := next.OutputDirectory != old.OutputDirectory || next.NetworkMode != old.NetworkMode || !maps.Equal(next.ToolPolicy, old.ToolPolicy)
	if !changed && !(in.IsEnabled != nil && *in.IsEnabled && !old.IsEnabled) {
		return nil
	}
	return a.stepUpForTask(r, scheduleGrants(next))
}

// runSchedule starts a schedule's task now; its grants need what a task's
// do.
func (a *API) runSchedule(w http.ResponseWriter, r *http.Request) error {
	if stale(r) {
		sc, err := a.st.GetSchedule(r.Context(), r.PathValue("id"))
		if err != nil {
			return err
		}
		if err := a.stepUpForTask(r, scheduleGrants(sc)); err != nil {
			return err
		}
	}
	t, err := a.o.RunSchedule(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return a.writeCreated(w, r, http.StatusOK, t)
}

func newScheduleID() string { return uuid.NewString() }
