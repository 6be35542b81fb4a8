package schedule

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load time zone %s: %v", name, err)
	}
	return loc
}

// at parses "2006-01-02 15:04" (or with ":05") as a wall time in loc.
func at(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	layout := "2006-01-02 15:04"
	if strings.Count(s, ":") == 2 {
		layout += ":05"
	}
	v, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

// utc parses "2006-01-02 15:04" as a UTC instant.
func utc(t *testing.T, s string) time.Time { return at(t, time.UTC, s) }

func daily(h, m int) *Recurrence { return &Recurrence{Kind: Daily, Hour: h, Minute: m} }

func weekly(h, m int, days ...int) *Recurrence {
	return &Recurrence{Kind: Weekly, DaysOfWeek: days, Hour: h, Minute: m}
}

func monthly(day, h, m int) *Recurrence {
	return &Recurrence{Kind: Monthly, DayOfMonth: day, Hour: h, Minute: m}
}

func TestNext(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	future := utc(t, "2026-06-01 12:00")

	for _, tc := range []struct {
		name   string
		spec   Spec
		after  time.Time
		want   time.Time // UTC
		wantOK bool
	}{
		// Daily.
		{"daily before today's time", Spec{Recurrence: daily(9, 30), Location: berlin},
			at(t, berlin, "2026-05-12 08:00"), utc(t, "2026-05-12 07:30"), true},
		{"daily after today's time", Spec{Recurrence: daily(9, 30), Location: berlin},
			at(t, berlin, "2026-05-12 10:00"), utc(t, "2026-05-13 07:30"), true},
		{"daily exactly at today's time is strictly after", Spec{Recurrence: daily(9, 30), Location: berlin},
			at(t, berlin, "2026-05-12 09:30"), utc(t, "2026-05-13 07:30"), true},
		{"daily a second before", Spec{Recurrence: daily(9, 30), Location: berlin},
			at(t, berlin, "2026-05-12 09:29:59"), utc(t, "2026-05-12 07:30"), true},
		{"daily uses the local date, not UTC's", Spec{Recurrence: daily(22, 0), Location: ny},
			at(t, ny, "2026-05-12 21:00"), utc(t, "2026-05-13 02:00"), true},
		{"daily midnight wraps the year", Spec{Recurrence: daily(0, 0), Location: ny},
			at(t, ny, "2026-12-31 23:59"), utc(t, "2027-01-01 05:00"), true},
		{"nil location is time.Local", Spec{Recurrence: daily(6, 0)},
			time.Date(2026, 5, 12, 7, 0, 0, 0, time.Local), time.Date(2026, 5, 13, 6, 0, 0, 0, time.Local).UTC(), true},

		// Weekly; 2026-05-12 is a Tuesday (3).
		{"weekly picks the nearest day", Spec{Recurrence: weekly(8, 0, 2, 4, 6), Location: ny},
			at(t, ny, "2026-05-12 12:00"), utc(t, "2026-05-13 12:00"), true},
		{"weekly today before the time", Spec{Recurrence: weekly(8, 0, 6, 3), Location: ny},
			at(t, ny, "2026-05-12 07:59"), utc(t, "2026-05-12 12:00"), true},
		{"weekly today after the time goes to the next listed day", Spec{Recurrence: weekly(8, 0, 3, 6), Location: ny},
			at(t, ny, "2026-05-12 08:01"), utc(t, "2026-05-15 12:00"), true},
		{"weekly wraps to next week", Spec{Recurrence: weekly(8, 0, 2, 3), Location: ny},
			at(t, ny, "2026-05-14 09:00"), utc(t, "2026-05-18 12:00"), true},
		{"weekly single day a week later", Spec{Recurrence: weekly(8, 0, 3), Location: ny},
			at(t, ny, "2026-05-12 08:00"), utc(t, "2026-05-19 12:00"), true},
		{"weekly Saturday to Sunday", Spec{Recurrence: weekly(23, 0, 1), Location: berlin},
			at(t, berlin, "2026-05-16 23:30"), utc(t, "2026-05-17 21:00"), true},

		// Monthly.
		{"monthly 31 in a leap February", Spec{Recurrence: monthly(31, 10, 0), Location: berlin},
			at(t, berlin, "2028-02-01 00:00"), utc(t, "2028-02-29 09:00"), true},
		{"monthly 31 in a common February", Spec{Recurrence: monthly(31, 10, 0), Location: berlin},
			at(t, berlin, "2027-02-01 00:00"), utc(t, "2027-02-28 09:00"), true},
		{"monthly 31 after the January run", Spec{Recurrence: monthly(31, 10, 0), Location: berlin},
			at(t, berlin, "2028-01-31 10:00"), utc(t, "2028-02-29 09:00"), true},
		{"monthly 31 after the February run goes to March 31", Spec{Recurrence: monthly(31, 10, 0), Location: berlin},
			at(t, berlin, "2027-02-28 10:00"), utc(t, "2027-03-31 08:00"), true},
		{"monthly 31 in April", Spec{Recurrence: monthly(31, 10, 0), Location: berlin},
			at(t, berlin, "2027-04-01 00:00"), utc(t, "2027-04-30 08:00"), true},
		{"monthly 30 skips nothing after February", Spec{Recurrence: monthly(30, 10, 0), Location: berlin},
			at(t, berlin, "2027-02-28 10:00"), utc(t, "2027-03-30 08:00"), true},
		{"monthly later this month", Spec{Recurrence: monthly(15, 7, 45), Location: ny},
			at(t, ny, "2026-05-12 00:00"), utc(t, "2026-05-15 11:45"), true},
		{"monthly wraps the year", Spec{Recurrence: monthly(1, 0, 0), Location: ny},
			at(t, ny, "2026-12-01 00:00"), utc(t, "2027-01-01 05:00"), true},

		// One-time.
		{"one-time in the future", Spec{At: &future}, utc(t, "2026-05-01 00:00"), future, true},
		{"one-time in the past", Spec{At: &future}, utc(t, "2026-07-01 00:00"), time.Time{}, false},
		{"one-time at after is not after it", Spec{At: &future}, future, time.Time{}, false},

		// Invalid specs have no run.
		{"invalid spec", Spec{Recurrence: weekly(8, 0)}, utc(t, "2026-05-01 00:00"), time.Time{}, false},

		// New York springs forward 2026-03-08 02:00 EST -> 03:00 EDT.
		{"NY gap: 02:30 runs at 03:00 EDT", Spec{Recurrence: daily(2, 30), Location: ny},
			at(t, ny, "2026-03-08 00:00"), utc(t, "2026-03-08 07:00"), true},
		{"NY gap: 02:00 runs at 03:00 EDT", Spec{Recurrence: daily(2, 0), Location: ny},
			at(t, ny, "2026-03-08 00:00"), utc(t, "2026-03-08 07:00"), true},
		{"NY gap: the day after is 02:30 EDT", Spec{Recurrence: daily(2, 30), Location: ny},
			utc(t, "2026-03-08 07:00"), utc(t, "2026-03-09 06:30"), true},
		{"NY gap: 01:59 still exists", Spec{Recurrence: daily(1, 59), Location: ny},
			at(t, ny, "2026-03-08 00:00"), utc(t, "2026-03-08 06:59"), true},
		{"NY gap: 03:00 is the same instant as the gap's runs", Spec{Recurrence: daily(3, 0), Location: ny},
			at(t, ny, "2026-03-08 00:00"), utc(t, "2026-03-08 07:00"), true},
		{"NY gap: weekly Sunday 02:15", Spec{Recurrence: weekly(2, 15, 1), Location: ny},
			at(t, ny, "2026-03-05 00:00"), utc(t, "2026-03-08 07:00"), true},
		{"NY gap: monthly on the 8th", Spec{Recurrence: monthly(8, 2, 45), Location: ny},
			at(t, ny, "2026-03-01 00:00"), utc(t, "2026-03-08 07:00"), true},

		// New York falls back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice.
		{"NY overlap: first occurrence (EDT)", Spec{Recurrence: daily(1, 30), Location: ny},
			at(t, ny, "2026-11-01 00:00"), utc(t, "2026-11-01 05:30"), true},
		{"NY overlap: not again at the second occurrence", Spec{Recurrence: daily(1, 30), Location: ny},
			utc(t, "2026-11-01 05:30"), utc(t, "2026-11-02 06:30"), true},
		{"NY overlap: after is inside the repeated hour", Spec{Recurrence: daily(1, 30), Location: ny},
			utc(t, "2026-11-01 06:10"), utc(t, "2026-11-02 06:30"), true},
		{"NY overlap: 01:00 is at the start of the first pass", Spec{Recurrence: daily(1, 0), Location: ny},
			at(t, ny, "2026-11-01 00:00"), utc(t, "2026-11-01 05:00"), true},
		{"NY overlap: 02:00 exists once, in EST", Spec{Recurrence: daily(2, 0), Location: ny},
			at(t, ny, "2026-11-01 00:00"), utc(t, "2026-11-01 07:00"), true},

		// Berlin springs forward 2026-03-29 02:00 CET -> 03:00 CEST.
		{"Berlin gap: 02:30 runs at 03:00 CEST", Spec{Recurrence: daily(2, 30), Location: berlin},
			at(t, berlin, "2026-03-28 12:00"), utc(t, "2026-03-29 01:00"), true},
		{"Berlin gap: the day after is 02:30 CEST", Spec{Recurrence: daily(2, 30), Location: berlin},
			utc(t, "2026-03-29 01:00"), utc(t, "2026-03-30 00:30"), true},

		// Berlin falls back 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice.
		{"Berlin overlap: first occurrence (CEST)", Spec{Recurrence: daily(2, 30), Location: berlin},
			at(t, berlin, "2026-10-24 12:00"), utc(t, "2026-10-25 00:30"), true},
		{"Berlin overlap: once", Spec{Recurrence: daily(2, 30), Location: berlin},
			utc(t, "2026-10-25 00:30"), utc(t, "2026-10-26 01:30"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.spec.Next(tc.after)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Fatalf("Next(%s) = %s, %v; want %s, %v", tc.after.UTC(), got, ok, tc.want, tc.wantOK)
			}
			if ok && got.Location() != time.UTC {
				t.Errorf("Next returned a time in %s, want UTC", got.Location())
			}
		})
	}
}

func TestDue(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	at9 := Spec{Recurrence: daily(9, 0), Location: berlin}
	once := at(t, berlin, "2026-05-12 09:00")
	oneTime := Spec{At: &once}

	for _, tc := range []struct {
		name          string
		spec          Spec
		next, now     time.Time
		wantRun       bool
		wantFollowing time.Time // UTC
		wantOK        bool
	}{
		{"not yet", at9, at(t, berlin, "2026-05-12 09:00"), at(t, berlin, "2026-05-12 08:59"),
			false, utc(t, "2026-05-12 07:00"), true},
		{"on time", at9, at(t, berlin, "2026-05-12 09:00"), at(t, berlin, "2026-05-12 09:00"),
			true, utc(t, "2026-05-13 07:00"), true},
		{"missed 3 days ago, now past today's time: once, then tomorrow", at9,
			at(t, berlin, "2026-05-09 09:00"), at(t, berlin, "2026-05-12 10:00"),
			true, utc(t, "2026-05-13 07:00"), true},
		{"missed 3 days ago, now before today's time: once, then today", at9,
			at(t, berlin, "2026-05-09 09:00"), at(t, berlin, "2026-05-12 08:00"),
			true, utc(t, "2026-05-12 07:00"), true},
		{"missed weekly runs skip to the next future slot", Spec{Recurrence: weekly(9, 0, 2, 6), Location: berlin},
			at(t, berlin, "2026-05-01 09:00"), at(t, berlin, "2026-05-12 10:00"),
			true, utc(t, "2026-05-15 07:00"), true},
		{"one-time not yet", oneTime, once, once.Add(-time.Minute), false, once.UTC(), true},
		{"one-time due has no following run", oneTime, once, once.Add(3 * 24 * time.Hour), true, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, following, ok := tc.spec.Due(tc.next, tc.now)
			if run != tc.wantRun || !following.Equal(tc.wantFollowing) || ok != tc.wantOK {
				t.Fatalf("Due(%s, %s) = %v, %s, %v; want %v, %s, %v", tc.next.UTC(), tc.now.UTC(),
					run, following, ok, tc.wantRun, tc.wantFollowing, tc.wantOK)
			}
			if !ok {
				return
			}
			if !following.After(tc.now) {
				t.Errorf("following %s is not after now %s", following, tc.now.UTC())
			}
			// Running at the following time does not run again until then.
			if run, _, _ := tc.spec.Due(following, following.Add(-time.Second)); run {
				t.Errorf("Due(%s) runs a second before it", following)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	now := utc(t, "2026-05-12 00:00")
	for _, tc := range []struct {
		name string
		spec Spec
		want []string // substrings of the message; none = valid
	}{
		{"one-time", Spec{At: &now}, nil},
		{"daily", Spec{Recurrence: daily(23, 59)}, nil},
		{"weekly", Spec{Recurrence: weekly(0, 0, 1, 7)}, nil},
		{"monthly", Spec{Recurrence: monthly(31, 0, 0)}, nil},
		{"daily ignores weekly and monthly fields", Spec{Recurrence: &Recurrence{Kind: Daily, DaysOfWeek: []int{9, 9}, DayOfMonth: 40}}, nil},
		{"both", Spec{At: &now, Recurrence: daily(1, 0)}, []string{"both scheduledAt and recurrence given"}},
		{"neither", Spec{}, []string{"a schedule needs scheduledAt or recurrence"}},
		{"zero instant", Spec{At: &time.Time{}}, []string{"scheduledAt is the zero time"}},
		{"hour 24", Spec{Recurrence: daily(24, 0)}, []string{"recurrence.hour 24: want 0..23"}},
		{"negative hour", Spec{Recurrence: daily(-1, 0)}, []string{"recurrence.hour -1: want 0..23"}},
		{"minute 60", Spec{Recurrence: daily(0, 60)}, []string{"recurrence.minute 60: want 0..59"}},
		{"unknown kind", Spec{Recurrence: &Recurrence{Kind: "hourly"}},
			[]string{`unknown recurrence type "hourly": want daily, weekly or monthly`}},
		{"no kind", Spec{Recurrence: &Recurrence{}}, []string{"recurrence needs a type"}},
		{"weekly without days", Spec{Recurrence: weekly(8, 0)}, []string{"weekly recurrence needs daysOfWeek (1=Sunday..7)"}},
		{"weekly day 0", Spec{Recurrence: weekly(8, 0, 0)}, []string{"recurrence.daysOfWeek 0: want 1 (Sunday)..7 (Saturday)"}},
		{"weekly day 8", Spec{Recurrence: weekly(8, 0, 8)}, []string{"recurrence.daysOfWeek 8"}},
		{"weekly duplicate day", Spec{Recurrence: weekly(8, 0, 2, 4, 2)}, []string{"recurrence.daysOfWeek has 2 twice"}},
		{"monthly day 0", Spec{Recurrence: monthly(0, 8, 0)}, []string{"recurrence.dayOfMonth 0: want 1..31"}},
		{"monthly day 32", Spec{Recurrence: monthly(32, 8, 0)}, []string{"recurrence.dayOfMonth 32: want 1..31"}},
		{"every problem is named", Spec{Recurrence: &Recurrence{Kind: Weekly, DaysOfWeek: []int{3, 3}, Hour: 25, Minute: -5}},
			[]string{"recurrence.daysOfWeek has 3 twice", "recurrence.hour 25", "recurrence.minute -5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %q", tc.want)
			}
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("Validate() = %v, not of class invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// Zones for the property test: whole-minute offsets since 2000, with
// transitions of an hour, of 30 minutes (Lord Howe), at midnight (São Paulo,
// Santiago), a skipped day (Apia, 2011-12-30), negative DST (Dublin), a
// suspended DST (Casablanca) and none (UTC, Kolkata).
var propertyZones = []string{
	"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Sao_Paulo",
	"America/Santiago", "Pacific/Apia", "Pacific/Chatham", "Asia/Kolkata", "Asia/Tehran",
	"Europe/Dublin", "Africa/Casablanca",
}

// wallOf returns the reading of loc's clock at t, written as a UTC time.
func wallOf(t time.Time, loc *time.Location) time.Time {
	_, offset := t.In(loc).Zone()
	return t.UTC().Add(time.Duration(offset) * time.Second)
}

// runsOn reports whether r runs on the calendar day of day (a UTC midnight).
func runsOn(r *Recurrence, day time.Time) bool {
	switch r.Kind {
	case Daily:
		return true
	case Weekly:
		for _, d := range r.DaysOfWeek {
			if d == int(day.Weekday())+1 {
				return true
			}
		}
	case Monthly:
		last := time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
		return day.Day() == min(r.DayOfMonth, last)
	}
	return false
}

// crossed reports whether a scheduled reading lies in (from, to].
func crossed(r *Recurrence, from, to time.Time) bool {
	clock := time.Duration(r.Hour)*time.Hour + time.Duration(r.Minute)*time.Minute
	for day := from.Truncate(24 * time.Hour); !day.After(to); day = day.AddDate(0, 0, 1) {
		w := day.Add(clock)
		if runsOn(r, day) && w.After(from) && !w.After(to) {
			return true
		}
	}
	return false
}

// bruteNext finds the first run after after by watching loc's clock minute by
// minute: a run is the first minute at which the clock reaches a scheduled
// reading it has never shown before. It starts two days early so that
// readings shown before a fall-back count as shown. It returns the zero time
// when there is no run within limit of after.
func bruteNext(r *Recurrence, loc *time.Location, after time.Time, limit time.Duration) time.Time {
	t := after.Add(-48 * time.Hour).Truncate(time.Minute)
	highest := wallOf(t, loc)
	for end := after.Add(limit); !t.After(end); {
		t = t.Add(time.Minute)
		w := wallOf(t, loc)
		if !w.After(highest) {
			continue
		}
		hit := crossed(r, highest, w)
		highest = w
		if hit && t.After(after) {
			return t
		}
	}
	return time.Time{}
}

func randomSpec(rng *rand.Rand, loc *time.Location) Spec {
	r := &Recurrence{Kind: []Kind{Daily, Weekly, Monthly}[rng.IntN(3)]}
	if rng.IntN(2) == 0 {
		r.Hour = rng.IntN(4) // where the transitions are
	} else {
		r.Hour = rng.IntN(24)
	}
	if rng.IntN(2) == 0 {
		r.Minute = 15 * rng.IntN(4)
	} else {
		r.Minute = rng.IntN(60)
	}
	switch r.Kind {
	case Weekly:
		for _, d := range rng.Perm(7)[:1+rng.IntN(7)] {
			r.DaysOfWeek = append(r.DaysOfWeek, d+1)
		}
	case Monthly:
		if rng.IntN(2) == 0 {
			r.DayOfMonth = 28 + rng.IntN(4)
		} else {
			r.DayOfMonth = 1 + rng.IntN(31)
		}
	}
	return Spec{Recurrence: r, Location: loc}
}

// aimAtTransition rewrites spec's time and day to a reading that loc's clock
// skips or repeats at a random offset change, and returns an instant up to two
// days before that change; ok is false when loc has no change there.
func aimAtTransition(rng *rand.Rand, spec Spec, loc *time.Location) (after time.Time, ok bool) {
	_, change := randomInstant(rng, time.UTC).In(loc).ZoneBounds()
	if change.IsZero() {
		return time.Time{}, false
	}
	old, now := wallOf(change.Add(-time.Minute), loc).Add(time.Minute), wallOf(change, loc)
	lo, hi := old, now
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	if !lo.Before(hi) {
		return time.Time{}, false // a change of name only
	}
	target := lo.Add(time.Duration(rng.Int64N(int64(hi.Sub(lo))))).Truncate(time.Minute)
	r := spec.Recurrence
	r.Hour, r.Minute = target.Hour(), target.Minute()
	switch r.Kind {
	case Weekly:
		if wd := int(target.Weekday()) + 1; !runsOn(r, target.Truncate(24*time.Hour)) {
			r.DaysOfWeek = append(r.DaysOfWeek, wd)
		}
	case Monthly:
		r.DayOfMonth = target.Day()
	}
	return change.Add(-time.Duration(rng.Int64N(int64(48 * time.Hour)))), true
}

// randomInstant is anywhere from 2000 to 2039, or half the time within three
// days of one of loc's offset changes.
func randomInstant(rng *rand.Rand, loc *time.Location) time.Time {
	from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	t := from.Add(time.Duration(rng.Int64N(int64(40 * 365 * 24 * time.Hour))))
	if rng.IntN(2) == 0 {
		if _, end := t.In(loc).ZoneBounds(); !end.IsZero() {
			t = end.Add(time.Duration(rng.Int64N(int64(6*24*time.Hour))) - 3*24*time.Hour)
		}
	}
	if rng.IntN(2) == 0 {
		t = t.Truncate(time.Minute) // often exactly on a minute, possibly a run
	}
	return t
}

func TestNextProperties(t *testing.T) {
	locs := make([]*time.Location, len(propertyZones))
	for i, name := range propertyZones {
		locs[i] = mustLoad(t, name)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var gaps, brute int
	for i := range 2000 {
		loc := locs[rng.IntN(len(locs))]
		spec := randomSpec(rng, loc)
		r := spec.Recurrence
		after := randomInstant(rng, loc)
		if rng.IntN(4) == 0 {
			if aimed, ok := aimAtTransition(rng, spec, loc); ok {
				after = aimed
			}
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("random spec %+v: %v", *r, err)
		}
		next, ok := spec.Next(after)
		if !ok {
			t.Errorf("case %d %s %+v: Next(%s) has no run", i, loc, *r, after)
			continue
		}
		if !next.After(after) || next.Location() != time.UTC {
			t.Errorf("case %d %s %+v: Next(%s) = %s, want a UTC time after it", i, loc, *r, after, next)
			continue
		}

		// The wall-clock rule: next reads the scheduled time on a scheduled
		// day, unless the clock jumped over that reading right at next.
		w := wallOf(next, loc)
		day := w.Truncate(24 * time.Hour)
		if w.Hour() != r.Hour || w.Minute() != r.Minute || w.Second() != 0 || !runsOn(r, day) {
			before := wallOf(next.Add(-time.Nanosecond), loc)
			if !crossed(r, before, w) || w.Sub(before) <= time.Minute {
				t.Errorf("case %d %s %+v: Next(%s) = %s, reading %s: not a scheduled time nor the end of a gap over one",
					i, loc, *r, after, next, w.Format(time.DateTime))
			}
			gaps++
		}

		// Next is stable from any instant before it.
		between := after.Add(time.Duration(rng.Int64N(int64(next.Sub(after)))))
		if again, _ := spec.Next(between); !again.Equal(next) {
			t.Errorf("case %d %s %+v: Next(%s) = %s but Next(%s) = %s", i, loc, *r, after, next, between, again)
		}

		// No run between after and next, by watching the clock.
		if i%10 == 0 {
			brute++
			limit := min(next.Sub(after), 35*24*time.Hour)
			want := bruteNext(r, loc, after, limit)
			if next.Sub(after) > limit {
				if !want.IsZero() {
					t.Errorf("case %d %s %+v: Next(%s) = %s, but the clock passes a run at %s", i, loc, *r, after, next, want)
				}
			} else if !want.Equal(next) {
				t.Errorf("case %d %s %+v: Next(%s) = %s, watching the clock gives %s", i, loc, *r, after, next, want)
			}
		}
	}
	t.Logf("2000 cases, %d at the end of a gap, %d checked minute by minute", gaps, brute)
	if gaps == 0 {
		t.Errorf("no case fell in a gap; the generator misses the transitions")
	}
}
