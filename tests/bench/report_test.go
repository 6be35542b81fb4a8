package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJSONShape: $BENCH_OUT maps each metric's name to {p50_ms, p95_ms,
// target_ms, baseline_ms (only where there is one), pass}, in
// milliseconds (or the metric's unit), names unescaped.
func TestJSONShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.json")
	metrics := []Metric{
		{Name: "a: warm -> first call", P50: 30 * time.Millisecond, P95: 45 * time.Millisecond, Target: 50 * time.Millisecond,
			Baseline: 170 * time.Millisecond, BaselineName: "cold"},
		{Name: "b: rate", P50: Quantity(10), P95: Quantity(12), Target: Quantity(16), AtLeast: true, Unit: "steps/s"},
		{Name: "c: tail", P50: 10 * time.Millisecond, P95: 150 * time.Millisecond, Target: 100 * time.Millisecond, TargetOnP95: true},
	}
	if err := writeJSON(path, metrics); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"a: warm -> first call"`) {
		t.Fatalf("metric name escaped or missing:\n%s", raw)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		p50, p95, target float64
		baseline         any
		pass             bool
	}{
		"a: warm -> first call": {30, 45, 50, 170.0, true},
		"b: rate":               {10, 12, 16, nil, false}, // a rate under its minimum
		"c: tail":               {10, 150, 100, nil, false},
	}
	for name, w := range want {
		m := got[name]
		if m == nil {
			t.Fatalf("%s missing from %s", name, raw)
		}
		if m["p50_ms"] != w.p50 || m["p95_ms"] != w.p95 || m["target_ms"] != w.target || m["pass"] != w.pass || m["baseline_ms"] != w.baseline {
			t.Errorf("%s = %v; want p50 %v, p95 %v, target %v, baseline %v, pass %v", name, m, w.p50, w.p95, w.target, w.baseline, w.pass)
		}
	}
}

// TestSkippedMetricSaysWhy: a metric that cannot be measured here (macOS
// guests off a Mac) shows as skipped with its reason, in the table and the
// JSON, and does not fail the run; a darwin row off a Mac is one.
func TestSkippedMetricSaysWhy(t *testing.T) {
	ms, err := benchDarwin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("darwin rows: %+v", ms)
	}
	for _, m := range ms {
		if m.Skipped == "" || !m.Pass() {
			t.Fatalf("off a Mac the darwin row %q is not skipped: %+v", m.Name, m)
		}
	}
	var b strings.Builder
	writeTable(&b, ms)
	if !strings.Contains(b.String(), "| skipped | needs a Mac") {
		t.Errorf("table:\n%s", b.String())
	}
	path := filepath.Join(t.TempDir(), "out.json")
	if err := writeJSON(path, ms); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var got map[string]map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if s, _ := got[ms[1].Name]["skipped"].(string); !strings.HasPrefix(s, "needs a Mac") {
		t.Errorf("JSON: %s", raw)
	}
}
