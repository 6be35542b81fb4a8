// Package schedule computes when scheduled tasks run: one-time schedules at a
// given instant, recurring ones daily, weekly or monthly at a wall-clock time
// in the user's time zone.
//
// A recurring run is due at the first instant at which the clock in the
// schedule's time zone reads the scheduled day and time or later. That rule
// settles the two daylight-saving cases:
//
//   - When the clock springs forward over the time (02:30 on a day that goes
//     from 01:59 straight to 03:00), the run is at the first instant after the
//     gap: 03:00 local, not 03:30.
//   - When the clock falls back and the time happens twice (01:30 EDT, then
//     01:30 EST an hour later), the run is once, at the first occurrence.
//
// Monthly schedules on a day some months lack (29, 30, 31) run on the last day
// of those months. Every time this package returns is in UTC.
package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Kind is how a recurring schedule repeats.
type Kind string

// The recurrence kinds, spelled as in the API's recurrence.type.
const (
	Daily   Kind = "daily"
	Weekly  Kind = "weekly"
	Monthly Kind = "monthly"
)

// Spec is a schedule's timing. Exactly one of At (one-time) or Recurrence is
// set.
type Spec struct {
	// At is the instant of a one-time schedule.
	At *time.Time
	// Recurrence is the rule of a recurring schedule.
	Recurrence *Recurrence
	// Location is the time zone whose wall clock a recurrence follows; nil
	// means time.Local. One-time schedules ignore it.
	Location *time.Location
}

// Recurrence is a wall-clock time repeated daily, weekly or monthly. Fields a
// kind does not use (DaysOfWeek unless weekly, DayOfMonth unless monthly) are
// ignored, so a schedule changed from weekly to daily keeps validating.
type Recurrence struct {
	Kind Kind
	// DaysOfWeek lists the weekly days, 1 = Sunday .. 7 = Saturday (the API's
	// convention, one more than time.Weekday); at least one, none twice.
	DaysOfWeek []int
	// DayOfMonth is the monthly day, 1..31; in months shorter than that, the
	// last day of the month.
	DayOfMonth int
	// Hour (0..23) and Minute (0..59) are the wall-clock time of every run.
	Hour, Minute int
}

// Validate reports what is wrong with s, as one error of class
// errdefs.ErrInvalid that names every bad field.
func (s Spec) Validate() error {
	var bad []string
	switch {
	case s.At != nil && s.Recurrence != nil:
		bad = append(bad, "both scheduledAt and recurrence given")
	case s.At == nil && s.Recurrence == nil:
		bad = append(bad, "a schedule needs scheduledAt or recurrence")
	case s.At != nil && s.At.IsZero():
		bad = append(bad, "scheduledAt is the zero time")
	case s.Recurrence != nil:
		bad = s.Recurrence.problems()
	}
	if len(bad) > 0 {
		return errdefs.Invalidf("invalid schedule: %s", strings.Join(bad, "; "))
	}
	return nil
}

// problems lists what is wrong with r, each naming the field.
func (r *Recurrence) problems() []string {
	var bad []string
	switch r.Kind {
	case Daily:
	case Weekly:
		if len(r.DaysOfWeek) == 0 {
			bad = append(bad, "weekly recurrence needs daysOfWeek (1=Sunday..7)")
		}
		seen := map[int]bool{}
		for _, d := range r.DaysOfWeek {
			switch {
			case d < 1 || d > 7:
				bad = append(bad, fmt.Sprintf("recurrence.daysOfWeek %d: want 1 (Sunday)..7 (Saturday)", d))
			case seen[d]:
				bad = append(bad, fmt.Sprintf("recurrence.daysOfWeek has %d twice", d))
			}
			seen[d] = true
		}
	case Monthly:
		if r.DayOfMonth < 1 || r.DayOfMonth > 31 {
			bad = append(bad, fmt.Sprintf("recurrence.dayOfMonth %d: want 1..31", r.DayOfMonth))
		}
	case "":
		bad = append(bad, "recurrence needs a type: daily, weekly or monthly")
	default:
		bad = append(bad, fmt.Sprintf("unknown recurrence type %q: want daily, weekly or monthly", string(r.Kind)))
	}
	if r.Hour < 0 || r.Hour > 23 {
		bad = append(bad, fmt.Sprintf("recurrence.hour %d: want 0..23", r.Hour))
	}
	if r.Minute < 0 || r.Minute > 59 {
		bad = append(bad, fmt.Sprintf("recurrence.minute %d: want 0..59", r.Minute))
	}
	return bad
}

// Next returns the first run strictly after after, in UTC. ok is false when
// there is none: a one-time schedule whose instant is not after after, or a
// spec that does not validate.
func (s Spec) Next(after time.Time) (t time.Time, ok bool) {
	if s.Validate() != nil {
		return time.Time{}, false
	}
	if s.At != nil {
		if s.At.After(after) {
			return s.At.UTC(), true
		}
		return time.Time{}, false
	}
	r, loc := s.Recurrence, s.location()
	y, m, d := after.In(loc).Date()
	// Calendar days are counted in UTC, where every day has 24 hours. The
	// search starts on after's local date: a run for an earlier date is never
	// after it. It may have to look a day past the obvious one, when a clock
	// that fell back across midnight already passed that day's time before
	// after.
	switch r.Kind {
	case Daily, Weekly:
		for i := range 16 {
			day := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC)
			if r.Kind == Weekly && !slices.Contains(r.DaysOfWeek, int(day.Weekday())+1) {
				continue
			}
			if t := r.on(day, loc); t.After(after) {
				return t, true
			}
		}
	case Monthly:
		for i := range 3 {
			month := time.Date(y, m+time.Month(i), 1, 0, 0, 0, 0, time.UTC)
			day := month.AddDate(0, 0, min(r.DayOfMonth, daysIn(month))-1)
			if t := r.on(day, loc); t.After(after) {
				return t, true
			}
		}
	}
	return time.Time{}, false // not reached for a valid spec
}

// Due reports whether a schedule whose next run was next should run at now,
// and returns the run after that. next is a time Next or Due returned.
//
// Before next, run is false and following is next. From next on, run is true
// (once, however many runs were missed while nothing was watching) and
// following is the first run after now, skipping the missed ones; ok is false
// when there is no following run (a one-time schedule, or an invalid spec).
func (s Spec) Due(next, now time.Time) (run bool, following time.Time, ok bool) {
	if now.Before(next) {
		return false, next.UTC(), true
	}
	following, ok = s.Next(now)
	return true, following, ok
}

func (s Spec) location() *time.Location {
	if s.Location == nil {
		return time.Local
	}
	return s.Location
}

// on returns r's run on the calendar day of day (a UTC midnight) in loc.
func (r *Recurrence) on(day time.Time, loc *time.Location) time.Time {
	wall := day.Add(time.Duration(r.Hour)*time.Hour + time.Duration(r.Minute)*time.Minute)
	return firstReading(wall, loc)
}

// daysIn returns the number of days in the month of t.
func daysIn(t time.Time) int {
	return time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
