package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdSchedules: hivecrew schedules add|ls|edit|on|off|rm|run
func cmdSchedules(e *env, args []string) error {
	return runTable(e, "schedules", []command{
		{"add", `[--title T] "<task>" (--at TIME | --daily HH:MM | --weekly DAYS@HH:MM | --monthly DAY@HH:MM) [flags of run]`, "schedule a task", schedulesAdd},
		{"ls", "", "list schedules", schedulesLs},
		{"edit", `ID ["<task>"] [--title T] [--at|--daily|--weekly|--monthly ...] [flags of run]`, "change what a schedule runs or when (only the flags given)", schedulesEdit},
		{"on", "ID", "turn a schedule on (its next run is computed from now)", schedulesSwitch(true)},
		{"off", "ID", "turn a schedule off (it keeps its settings)", schedulesSwitch(false)},
		{"rm", "ID", "delete a schedule", schedulesRm},
		{"run", "ID", "run a schedule's task now (prints the task id)", schedulesRun},
	}, args)
}

// whenFlags are a schedule's title and timing flags.
type whenFlags struct {
	title, at, daily, weekly, monthly, tz *string
}

func (wf *whenFlags) register(fs *flag.FlagSet) {
	wf.title = fs.String("title", "", "the schedule's `TITLE` (default: from the task)")
	wf.at = fs.String("at", "", "run once at `TIME` (RFC 3339, or 2006-01-02T15:04 in --tz)")
	wf.daily = fs.String("daily", "", "run every day at `HH:MM`")
	wf.weekly = fs.String("weekly", "", "run on `DAYS@HH:MM`, e.g. mon,wed@09:30 or mon-fri@08:00")
	wf.monthly = fs.String("monthly", "", "run on `DAY@HH:MM` of every month, e.g. 1@07:00")
	wf.tz = fs.String("tz", "", "IANA time `ZONE` of the times (default: the helper's)")
}

// given reports whether any timing flag was given.
func (wf *whenFlags) given() bool {
	return *wf.at != "" || *wf.daily != "" || *wf.weekly != "" || *wf.monthly != ""
}

func (wf *whenFlags) when() (wire.When, error) {
	return parseWhen(*wf.at, *wf.daily, *wf.weekly, *wf.monthly, *wf.tz)
}

// scheduleOf is a schedule that starts the task in.
func scheduleOf(in wire.CreateTask) wire.CreateSchedule {
	sc := wire.CreateSchedule{
		Description: in.Description, ProviderName: in.ProviderName, ModelID: in.ModelID, OutputDirectory: in.OutputDirectory,
		ReasoningEnabled: in.ReasoningEnabled, ReasoningEffort: in.ReasoningEffort, TemplateID: in.TemplateID,
		TimeoutMinutes: in.TimeoutMinutes, MaxIterations: in.MaxIterations, NetworkMode: in.NetworkMode, ToolPolicy: in.ToolPolicy,
		HostFolders: in.HostFolders, Provisioning: in.Provisioning, AllowHosts: in.AllowHosts,
		BudgetUSD: in.BudgetUSD, BudgetTokens: in.BudgetTokens,
	}
	if in.PlanFirst {
		sc.PlanFirst = &in.PlanFirst
	}
	return sc
}

// scheduleFlags are the flags of schedules add and edit: run's and the
// schedule's own.
type scheduleFlags struct {
	tf taskFlags
	sf specFlags
	wf whenFlags
}

// parseScheduleFlags parses the arguments of schedules add or edit.
func (e *env) parseScheduleFlags(args []string) (*flag.FlagSet, *scheduleFlags, []string, error) {
	fs := e.flags()
	f := &scheduleFlags{}
	f.tf.register(fs)
	f.sf.register(fs)
	f.wf.register(fs)
	pos, err := e.parse(fs, args)
	return fs, f, pos, err
}

func schedulesAdd(e *env, args []string) error {
	fs, f, pos, err := e.parseScheduleFlags(args)
	if err != nil {
		return err
	}
	tf, sf, wf := &f.tf, &f.sf, &f.wf
	desc, err := tf.finish(pos, e.stdin())
	if err != nil {
		return err
	}
	if desc == "" {
		return e.bad(fs, `schedules add needs a task: hivecrew schedules add --daily 09:00 "<task>"`)
	}
	when, err := wf.when()
	if err != nil {
		return e.bad(fs, "%s", err.Error())
	}
	task, err := sf.task(e, fs, *tf, desc)
	if err != nil {
		return err
	}
	in := scheduleOf(task)
	in.Title, in.Schedule = strings.TrimSpace(*wf.title), &when
	c, err := e.client()
	if err != nil {
		return err
	}
	sc, err := c.CreateSchedule(e.ctx, in, tf.files...)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sc)
	}
	e.out("Added schedule %s: %s, next run %s.", shortID(sc.ID), describeWhen(sc), nextRun(sc))
	return nil
}

// schedulesEdit changes what the flags given say: the task's text, title,
// timing and any option of run (a list flag replaces the list, --allow
// the tool policy). Input files stay as they were added.
func schedulesEdit(e *env, args []string) error {
	fs, f, pos, err := e.parseScheduleFlags(args)
	if err != nil {
		return err
	}
	tf, sf, wf := &f.tf, &f.sf, &f.wf
	if len(pos) == 0 {
		return e.bad(fs, `schedules edit needs a schedule id: hivecrew schedules edit ID --daily 08:00`)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name != "home" && fl.Name != "json" { // where and how, not what
			set[fl.Name] = true
		}
	})
	if set["file"] {
		return e.bad(fs, "--file: a schedule's input files are given when it is added (add a new schedule to change them)")
	}
	desc, err := tf.finish(pos[1:], e.stdin())
	if err != nil {
		return err
	}
	task, err := sf.task(e, fs, *tf, desc)
	if err != nil {
		return err
	}
	full := scheduleOf(task)
	in := wire.CreateSchedule{Title: strings.TrimSpace(*wf.title), Description: desc, ProviderName: tf.provider, ModelID: tf.model,
		OutputDirectory: tf.outputDir, ReasoningEffort: task.ReasoningEffort, TemplateID: task.TemplateID,
		TimeoutMinutes: task.TimeoutMinutes, MaxIterations: task.MaxIterations, NetworkMode: task.NetworkMode,
		BudgetUSD: task.BudgetUSD, BudgetTokens: task.BudgetTokens}
	if set["plan-first"] {
		in.PlanFirst = &task.PlanFirst
	}
	// A list flag given replaces the list (non-nil, even if it ends empty).
	if set["folder"] {
		in.HostFolders = append([]string{}, full.HostFolders...)
	}
	if set["allow-host"] {
		in.AllowHosts = append([]string{}, full.AllowHosts...)
	}
	if set["allow"] {
		in.ToolPolicy = full.ToolPolicy
	}
	if set["env"] || set["setup"] {
		in.Provisioning = full.Provisioning
	}
	switch {
	case wf.given():
		when, err := wf.when()
		if err != nil {
			return e.bad(fs, "%s", err.Error())
		}
		in.Schedule = &when
	case *wf.tz != "":
		return e.bad(fs, "--tz goes with --at, --daily, --weekly or --monthly")
	}
	if len(set) == 0 && desc == "" {
		return e.bad(fs, "nothing to change: give the task's new text, --title, a timing or a flag of run")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	id, err := scheduleID(e.ctx, c, pos[0])
	if err != nil {
		return err
	}
	sc, err := c.UpdateSchedule(e.ctx, id, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(sc)
	}
	e.out("Changed schedule %s: %s, next run %s.", shortID(sc.ID), describeWhen(sc), nextRun(sc))
	return nil
}

// schedulesSwitch is schedules on (on) or off.
func schedulesSwitch(on bool) func(e *env, args []string) error {
	return switcher(func(c *client.Client, ctx context.Context, arg string, on bool) (wire.Schedule, error) {
		id, err := scheduleID(ctx, c, arg)
		if err != nil {
			return wire.Schedule{}, err
		}
		return c.UpdateSchedule(ctx, id, wire.CreateSchedule{IsEnabled: &on})
	}, func(e *env, sc wire.Schedule, on bool) {
		if on {
			e.out("Turned schedule %s on: %s, next run %s.", shortID(sc.ID), describeWhen(sc), nextRun(sc))
		} else {
			e.out("Turned schedule %s off: it runs no more until `hivecrew schedules on %s`.", shortID(sc.ID), shortID(sc.ID))
		}
	})(on)
}

// parseWhen turns the timing flags (exactly one of them) into a When.
func parseWhen(at, daily, weekly, monthly, tz string) (wire.When, error) {
	when := wire.When{TimeZone: tz}
	set := 0
	for _, v := range []string{at, daily, weekly, monthly} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return when, errors.New("give exactly one of --at, --daily, --weekly and --monthly")
	}
	switch {
	case at != "":
		t, err := parseAt(at, tz)
		if err != nil {
			return when, err
		}
		when.ScheduledAt = &t
		return when, nil
	case daily != "":
		h, m, err := parseClock(daily)
		if err != nil {
			return when, fmt.Errorf("--daily: %w", err)
		}
		when.Recurrence = &wire.Recurrence{Type: "daily", Hour: h, Minute: m}
	case weekly != "":
		days, hm, ok := strings.Cut(weekly, "@")
		if !ok {
			return when, fmt.Errorf("--weekly %q: want DAYS@HH:MM, e.g. mon,wed@09:30", weekly)
		}
		dow, err := parseDays(days)
		if err != nil {
			return when, fmt.Errorf("--weekly: %w", err)
		}
		h, m, err := parseClock(hm)
		if err != nil {
			return when, fmt.Errorf("--weekly: %w", err)
		}
		when.Recurrence = &wire.Recurrence{Type: "weekly", DaysOfWeek: dow, Hour: h, Minute: m}
	default:
		day, hm, ok := strings.Cut(monthly, "@")
		if !ok {
			return when, fmt.Errorf("--monthly %q: want DAY@HH:MM, e.g. 1@07:00", monthly)
		}
		d, err := strconv.Atoi(strings.TrimSpace(day))
		if err != nil || d < 1 || d > 31 {
			return when, fmt.Errorf("--monthly: day %q: want 1..31", day)
		}
		h, m, err := parseClock(hm)
		if err != nil {
			return when, fmt.Errorf("--monthly: %w", err)
		}
		when.Recurrence = &wire.Recurrence{Type: "monthly", DayOfMonth: d, Hour: h, Minute: m}
	}
	return when, nil
}

// parseAt reads an RFC 3339 time, or a time without zone in tz (else local).
func parseAt(s, tz string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	loc := time.Local
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, fmt.Errorf("--tz %q: not an IANA time zone", tz)
		}
		loc = l
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--at %q: want a time like 2026-01-02T15:04:05Z or 2026-01-02T15:04", s)
}

// parseClock reads HH:MM.
func parseClock(s string) (int, int, error) {
	hs, ms, ok := strings.Cut(strings.TrimSpace(s), ":")
	h, herr := strconv.Atoi(hs)
	m, merr := strconv.Atoi(ms)
	if !ok || herr != nil || merr != nil || h < 0 || h > 23 || m < 0 || m > 59 || len(ms) != 2 {
		return 0, 0, fmt.Errorf("time %q: want HH:MM (00:00 to 23:59)", s)
	}
	return h, m, nil
}

// weekdays are the day names in the API's order (1 = Sunday).
var weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// parseDays reads days of the week (mon,wed or mon-fri, names of at least
// three letters, or 1..7 with 1 = Sunday) as the API's numbers, in order.
func parseDays(s string) ([]int, error) {
	day := func(name string) (int, error) {
		name = strings.ToLower(strings.TrimSpace(name))
		if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= 7 {
			return n, nil
		}
		for i, d := range weekdays {
			if len(name) >= 3 && strings.HasPrefix(d, name) {
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("day %q: want mon, tue, wed, thu, fri, sat or sun", name)
	}
	var seen [8]bool
	for _, part := range strings.Split(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := day(from)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = day(to); err != nil {
				return nil, err
			}
		}
		for d := a; ; d = d%7 + 1 { // a range may wrap: fri-mon
			seen[d] = true
			if d == b {
				break
			}
		}
	}
	var out []int
	for d := 1; d <= 7; d++ {
		if seen[d] {
			out = append(out, d)
		}
	}
	return out, nil
}

// describeWhen says when a schedule runs: "daily 09:30 (Europe/Berlin)".
func describeWhen(sc wire.Schedule) string {
	r := sc.Recurrence
	var s string
	switch {
	case r == nil && sc.ScheduledAt != nil:
		return "once at " + inZone(*sc.ScheduledAt, sc.TimeZone)
	case r == nil:
		return sc.ScheduleType
	case r.Type == "daily":
		s = fmt.Sprintf("daily %02d:%02d", r.Hour, r.Minute)
	case r.Type == "weekly":
		names := make([]string, 0, len(r.DaysOfWeek))
		for _, d := range r.DaysOfWeek {
			if d >= 1 && d <= 7 {
				names = append(names, weekdays[d-1][:3])
			}
		}
		s = fmt.Sprintf("weekly %s %02d:%02d", strings.Join(names, ","), r.Hour, r.Minute)
	case r.Type == "monthly":
		s = fmt.Sprintf("monthly on day %d %02d:%02d", r.DayOfMonth, r.Hour, r.Minute)
	default:
		s = fmt.Sprintf("%s %02d:%02d", r.Type, r.Hour, r.Minute)
	}
	if sc.TimeZone != "" {
		s += " (" + sc.TimeZone + ")"
	}
	return s
}

// nextRun is a schedule's next run in its time zone, "off" or "none".
func nextRun(sc wire.Schedule) string {
	if !sc.IsEnabled {
		return "off"
	}
	if sc.NextRunAt == nil {
		return "none"
	}
	return inZone(*sc.NextRunAt, sc.TimeZone)
}

// inZone formats t in the IANA zone tz (local when unknown).
func inZone(t time.Time, tz string) string {
	if loc, err := time.LoadLocation(tz); err == nil && tz != "" {
		return t.In(loc).Format("2006-01-02 15:04 MST")
	}
	return localTime(t)
}

func schedulesLs(e *env, args []string) error {
	return listing[wire.ScheduleList, wire.Schedule]{
		get:    (*client.Client).Schedules,
		items:  func(l wire.ScheduleList) []wire.Schedule { return l.Schedules },
		none:   `No schedules yet: add one with hivecrew schedules add --daily 09:00 "<task>".`,
		header: []string{"ID", "TITLE", "WHEN", "NEXT RUN", "LAST RUN", "ENABLED"},
		cells: func(sc wire.Schedule) []string {
			enabled := "yes"
			if !sc.IsEnabled {
				enabled = "no"
			}
			last := "-"
			if sc.LastRunAt != nil {
				last = inZone(*sc.LastRunAt, sc.TimeZone)
			}
			return []string{shortID(sc.ID), clip(oneLine(sc.Title), 40), describeWhen(sc), nextRun(sc), last, enabled}
		},
	}.run(e, args)
}

// scheduleID resolves a schedule id or a unique prefix of one.
func scheduleID(ctx context.Context, c *client.Client, id string) (string, error) {
	l, err := c.Schedules(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, sc := range l.Schedules {
		if sc.ID == id {
			return id, nil
		}
		if strings.HasPrefix(sc.ID, id) {
			found = append(found, sc.ID)
		}
	}
	switch len(found) {
	case 0:
		return id, nil // the helper says what is wrong with it
	case 1:
		return found[0], nil
	}
	return "", errdefs.Invalidf("schedule id %s is ambiguous: it starts %d schedules", id, len(found))
}

// oneSchedule parses a command that takes one schedule id, connects and
// resolves the id.
func (e *env) oneSchedule(args []string) (*client.Client, string, error) {
	c, pos, err := e.connect(e.flags(), args, 1)
	if err != nil {
		return nil, "", err
	}
	id, err := scheduleID(e.ctx, c, pos[0])
	return c, id, err
}

func schedulesRm(e *env, args []string) error {
	c, id, err := e.oneSchedule(args)
	if err != nil {
		return err
	}
	if err := c.RemoveSchedule(e.ctx, id); err != nil {
		return err
	}
	e.out("Deleted schedule %s.", shortID(id))
	return nil
}

func schedulesRun(e *env, args []string) error {
	c, id, err := e.oneSchedule(args)
	if err != nil {
		return err
	}
	return e.printNewTask(c.RunSchedule(e.ctx, id))
}
