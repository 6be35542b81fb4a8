package frame

import (
	"slices"
	"sync"
)

// changelogLen is how many frames a Changelog remembers: more than a
// consumer skips between two of its frames (a live view at 10 frames a
// second against an agent's step), few enough to merge quickly.
const changelogLen = 32

// Changelog remembers which rows changed in the last frames of one source,
// so that a consumer that did not see every frame (a scaler for the
// agent's screenshots between two live-view frames) can learn what
// changed since the frame it saw last. The zero value is ready to use; it
// is safe for concurrent use.
type Changelog struct {
	mu   sync.Mutex
	ring [changelogLen]logged
}

// logged is a frame's Seq and Changes (nil: anything may have changed).
type logged struct {
	seq uint64
	ch  *Changes
}

// Add notes what changed in f. Unnumbered frames are not noted.
func (l *Changelog) Add(f *Frame) {
	if f.Seq == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[f.Seq%changelogLen] = logged{seq: f.Seq, ch: f.Changes}
}

// Since returns the rows of f that can differ from the source's frame
// seq, or nil when the log cannot tell: a frame between the two was not
// noted, or said that anything may have changed.
func (l *Changelog) Since(seq uint64, f *Frame) *Changes {
	if seq == 0 || f.Seq < seq || f.Seq-seq > changelogLen {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var rows []Rows
	for n := f.Seq; n > seq; n-- {
		e := l.ring[n%changelogLen]
		if e.seq != n || e.ch == nil || e.ch.Since != n-1 {
			return nil
		}
		rows = append(rows, e.ch.Rows...)
	}
	return &Changes{Since: seq, Rows: MergeRows(rows)}
}

// MergeRows sorts row ranges and merges those that overlap or touch, in
// place.
func MergeRows(rows []Rows) []Rows {
	slices.SortFunc(rows, func(a, b Rows) int { return a.Y0 - b.Y0 })
	merged := rows[:0]
	for _, r := range rows {
		if n := len(merged); n > 0 && r.Y0 <= merged[n-1].Y1 {
			merged[n-1].Y1 = max(merged[n-1].Y1, r.Y1)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// changesSince returns the rows of f that can differ from the source's
// frame seq, which a consumer (a scaler, an encoder) last saw: from log
// when given, else from f.Changes when they are since that frame. It
// returns nil (anything may differ) when neither can tell, or either
// frame is unnumbered.
func changesSince(seq uint64, f *Frame, log *Changelog) *Changes {
	switch {
	case seq == 0 || f.Seq == 0:
		return nil
	case log != nil:
		return log.Since(seq, f)
	case f.Changes != nil && f.Changes.Since == seq:
		return f.Changes
	}
	return nil
}
