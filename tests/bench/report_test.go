package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
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

// TestHTMLReport: the report holds every row with its target, baseline and
// whether it passed, the capacity curve and memory as SVG with the target
// line and a point per level, and a chart per soak resource; every SVG is
// well-formed XML, and names from the metrics are escaped.
func TestHTMLReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	metrics := []Metric{
		{Name: "store: <insert>", P50: 2 * time.Millisecond, P95: 3 * time.Millisecond, Target: 5 * time.Millisecond, Baseline: 9 * time.Millisecond, BaselineName: "naive"},
		{Name: "capacity: 16 agents, step overhead", P50: 30 * time.Millisecond, P95: 60 * time.Millisecond, Target: 100 * time.Millisecond, TargetOnP95: true, Chart: "capacity", X: 16,
			Cond: Conditions{Window: 18 * time.Second, CPUSome: 0.2, IOSome: 0.05, Others: 0.01}},
		{Name: "capacity: 32 agents, step overhead", P50: 50 * time.Millisecond, P95: 140 * time.Millisecond, Target: 100 * time.Millisecond, TargetOnP95: true, Chart: "capacity", X: 32,
			Violation: "CPU: p95 step overhead 140ms over 100ms", Cond: Conditions{Window: 18 * time.Second, CPUSome: 0.6, IOSome: 0.31, IOFull: 0.22, Others: 1.4, Kernel: 0.2, Steal: 0.15}},
		{Name: "capacity: 64 agents, step overhead", Skipped: "not run: 32 agents already missed the target"},
		{Name: "capacity: 16 agents, memory", P50: Quantity(800), P95: Quantity(800), Target: Quantity(12288), Unit: "MB", Chart: "capacity-memory", X: 16},
		{Name: "soak: goroutines growth after 100 tasks", P50: Quantity(2), P95: Quantity(2), Target: Quantity(10), Unit: "%", Chart: "soak",
			Series: []Point{{0, 40}, {100, 52}, {200, 53}}, SeriesUnit: "goroutines"},
	}
	if err := writeHTML(path, metrics, 90*time.Second, "Partial: written after 1 of 2 suites; still to run: soak."); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	for _, want := range []string{
		"store: &lt;insert&gt;", "≤ 5.000 ms", "9.000 ms (naive)", "4.5×",
		"≤ 100.000 ms (p95)", `<span class="fail">no</span>`, "<strong>CPU: p95 step overhead 140ms over 100ms</strong>",
		"not run: 32 agents already missed the target", "6 metrics, 1 missed their target, 1 skipped here",
		"Capacity: p95 step overhead", "Capacity: memory of all sandboxes", "goroutines growth after 100 tasks", "target 100 ms",
		"Partial: written after 1 of 2 suites; still to run: soak.", "<th scope=\"col\">Machine</th>",
		"others 1.40 cores, kernel 0.20, orphans 0.00, steal 0.15; pressure cpu 60%, io 31% (full 22%)",
		"Capacity: the machine during each level&#39;s window", "IO pressure (full)", "other processes, % of a core", "steal (the hypervisor&#39;s), % of a core",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 4 {
		t.Fatalf("%d charts, want 4 (overhead, memory, the machine's conditions, one soak resource)", len(svgs))
	}
	// The conditions chart: 5 series at the 2 measured levels; IO full
	// pressure 22% at 32 agents is a point of its own, and so is the
	// steal of 15% of a core.
	if n := strings.Count(svgs[2], "<circle"); n != 10 {
		t.Errorf("the conditions chart has %d points, want 10", n)
	}
	if !strings.Contains(svgs[2], "at 32: 15 %") {
		t.Errorf("the conditions chart lacks the point steal 15%% at 32 agents:\n%s", svgs[2])
	}
	if !strings.Contains(svgs[2], "IO pressure (full) at 32: 22 %") {
		t.Errorf("the conditions chart lacks the point IO full 22%% at 32 agents:\n%s", svgs[2])
	}
	if n := strings.Count(svgs[0], "<circle"); n != 2 {
		t.Errorf("the capacity curve has %d points, want 2 (the skipped level is not drawn)", n)
	}
	for _, svg := range svgs {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			if _, err := dec.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("an SVG is not well-formed: %v\n%s", err, svg)
			}
		}
	}
}

// TestReportLandsInAFolderNotYetMade: BENCH_OUT and BENCH_REPORT in a
// folder that does not exist yet get it made, rather than a summary line
// pointing at files that were never written.
func TestReportLandsInAFolderNotYetMade(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "today")
	ms := []Metric{{Name: "store: verify API key", P50: 50 * time.Microsecond, P95: 100 * time.Microsecond, Target: time.Millisecond}}
	if err := writeJSON(filepath.Join(dir, "results.json"), ms); err != nil {
		t.Fatal(err)
	}
	if err := writeHTML(filepath.Join(dir, "report.html"), ms, time.Second, ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "report.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), "verify API key") {
			t.Errorf("%s: %v, holds the metric: %v", f, err, strings.Contains(string(b), "verify API key"))
		}
	}
}
