package schedule

import "time"

// offsetReach bounds how far a zone's clock is from UTC. Real offsets stay
// within about 15 hours; a day leaves a margin.
const offsetReach = 24 * time.Hour

// firstReading returns, in UTC, the first instant at which the clock in loc
// reads wall or later. wall is a wall-clock reading written as a UTC time (its
// fields are the reading).
//
// Across one period of a zone's offset (between two transitions) the clock
// reads instant+offset, which only grows, so the first instant with a reading
// at or past wall in that period is the later of the period's start and
// wall-offset, if that is still inside the period. Walking the periods in order
// from well before wall, the first that has one holds the answer: the instant
// itself when the reading exists once, its first occurrence when the clock
// falls back over it, and the start of the period after the gap when the clock
// springs forward over it.
func firstReading(wall time.Time, loc *time.Location) time.Time {
	t := wall.Add(-offsetReach) // its reading is before wall in any zone
	for {
		local := t.In(loc)
		_, offset := local.Zone()
		_, end := local.ZoneBounds()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if at.Before(t) {
			at = t
		}
		// A period with no end lasts forever; past wall+offsetReach every
		// reading is past wall, so the walk stops there at the latest.
		if end.IsZero() || at.Before(end) || !t.Before(wall.Add(offsetReach)) {
			return at.UTC()
		}
		t = end
	}
}
