package main

import (
	"strings"
	"testing"
	"time"
)

// TestALevelPastTheGoalIsALimit: 256 agents whose last one never got to
// work (the run that lost the whole table) are a row that says the
// machine's limit and why, failing nothing; the same at the goal fails
// with its reason.
func TestALevelPastTheGoalIsALimit(t *testing.T) {
	stuck := "[[c256_115]] made 0 steps in 6m16s and is failed: no status reason; its last events: error \"VM did not boot\""
	past := capacityLevel{agents: 256, errors: []string{stuck}, setup: 376 * time.Second}
	rows := past.metrics(3 * time.Second)
	if len(rows) != 1 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	r := rows[0]
	if !r.Pass() || r.Skipped != "" || !r.unmeasured() {
		t.Errorf("past the goal: pass %v, skipped %q, unmeasured %v; want a passing row with no figure", r.Pass(), r.Skipped, r.unmeasured())
	}
	for _, want := range []string{"the machine's limit, past the goal of 128 agents", stuck, "setup 6m16s"} {
		if !strings.Contains(r.Note, want) {
			t.Errorf("note %q lacks %q", r.Note, want)
		}
	}
	at := capacityLevel{agents: 128, errors: []string{stuck}}
	r = at.metrics(3 * time.Second)[0]
	if r.Pass() || !strings.Contains(r.Violation, stuck) {
		t.Errorf("at the goal: pass %v, violation %q; want a failure with the reason", r.Pass(), r.Violation)
	}
}

// TestBesideWindowRow: the row of agents measured while sandboxes start
// beside them carries the capacity target, the same agents' figures with
// none starting, and why it missed: a stall, or a start that failed.
func TestBesideWindowRow(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	quiet := ms(40, 41, 42, 43, 44, 45, 46, 47, 48, 60)
	b := besideWindow{agents: 64, quiet: quiet, overhead: ms(42, 43, 44, 45, 46, 47, 48, 49, 50, 70)}
	r := b.metric()
	if !r.Pass() || r.Baseline != 44*time.Millisecond || !strings.Contains(r.Note, "none starting: p95 60ms") {
		t.Errorf("met: pass %v, baseline %s, note %q", r.Pass(), r.Baseline, r.Note)
	}
	b.overhead = ms(42, 43, 44, 45, 46, 47, 48, 49, 50, 180)
	if r = b.metric(); r.Pass() || !strings.Contains(r.Violation, "a start stalls its neighbours: p95 step overhead 180ms") {
		t.Errorf("stalled: pass %v, violation %q", r.Pass(), r.Violation)
	}
	b.overhead = quiet
	b.errors = []string{"[[c64_beside7]] made 0 requests"}
	if r = b.metric(); r.Pass() || !strings.Contains(r.Violation, "[[c64_beside7]]") {
		t.Errorf("a start failed: pass %v, violation %q", r.Pass(), r.Violation)
	}
}
