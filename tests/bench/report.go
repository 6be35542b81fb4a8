package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Metric is one row of the benchmark table.
type Metric struct {
	Name string
	// P50 and P95 are the measured median and 95th percentile.
	P50, P95 time.Duration
	// Target is the figure P50 must meet (P95 when TargetOnP95): at most,
	// or at least when AtLeast (a rate).
	Target      time.Duration
	TargetOnP95 bool
	AtLeast     bool
	// Baseline is the P50 of the named baseline, measured in the same run; 0
	// when the metric has none.
	Baseline     time.Duration
	BaselineName string
	// MinSpeedup, when set, also requires Baseline/P50 >= MinSpeedup.
	MinSpeedup float64
	Samples    int
	// Unit, when set, says the figures are not durations: P50, P95 and
	// Target then carry Value*time.Millisecond per unit (see Quantity).
	Unit string
	// Note is shown beside the metric (what was measured, a count).
	Note string
	// Skipped, when set, says why the metric was not measured on this
	// machine (a Mac-only figure off a Mac); it neither passes nor fails.
	Skipped string
	// Violation, when set, is a requirement the run broke beside the
	// figure (an error the user would have seen): the metric fails.
	Violation string
	// Cond is what the machine was doing while the figure was measured:
	// the window of a capacity level, else its whole suite (see stamp).
	Cond Conditions
	// Chart names the HTML report's chart the metric is drawn on: at X
	// (its P95; capacity levels), or as its Series (in SeriesUnit; the
	// soak's resources over tasks). Neither is in the JSON.
	Chart      string
	X          float64
	Series     []Point
	SeriesUnit string
}

// Point is a point of a chart's line.
type Point struct{ X, Y float64 }

// Quantity encodes a non-time figure in a duration field of a Metric whose
// Unit is set.
func Quantity(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// Pass reports whether the metric meets its target (and speed-up, if any).
func (m Metric) Pass() bool {
	if m.Skipped != "" {
		return true
	}
	if m.Violation != "" {
		return false
	}
	got := m.P50
	if m.TargetOnP95 {
		got = m.P95
	}
	if m.Target > 0 && (!m.AtLeast && got > m.Target || m.AtLeast && got < m.Target) {
		return false
	}
	if m.MinSpeedup > 0 && (m.Baseline == 0 || float64(m.Baseline)/float64(m.P50) < m.MinSpeedup) {
		return false
	}
	return true
}

// unmeasured says the metric has no figure: a suite that failed, a level
// whose agents never got to work (a zero that was measured, with a target
// it meets, is a figure).
func (m Metric) unmeasured() bool {
	return m.Samples == 0 && m.P50 == 0 && m.P95 == 0 && (m.Target == 0 || m.Violation != "")
}

// percentiles returns the p50 and p95 of samples (nearest rank).
func percentiles(samples []time.Duration) (p50, p95 time.Duration) {
	return rank(samples, 0.50), rank(samples, 0.95)
}

// rank returns the p-quantile of samples (nearest rank).
func rank(samples []time.Duration, p float64) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// measure runs fn n times after warm warm-up runs and returns its percentiles.
func measure(n, warm int, fn func() error) (p50, p95 time.Duration, err error) {
	return measureAfter(n, warm, nil, fn)
}

// measureAfter is measure with an untimed setup before every run of fn
// (nil: none).
func measureAfter(n, warm int, setup, fn func() error) (p50, p95 time.Duration, err error) {
	run := func() (time.Duration, error) {
		if setup != nil {
			if err := setup(); err != nil {
				return 0, err
			}
		}
		t0 := time.Now()
		err := fn()
		return time.Since(t0), err
	}
	for range warm {
		if _, err := run(); err != nil {
			return 0, 0, err
		}
	}
	samples := make([]time.Duration, 0, n)
	for range n {
		d, err := run()
		if err != nil {
			return 0, 0, err
		}
		samples = append(samples, d)
	}
	p50, p95 = percentiles(samples)
	return p50, p95, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeTable prints the metrics as a Markdown table.
func writeTable(w io.Writer, metrics []Metric) {
	fmt.Fprintln(w, "| metric | p50 | p95 | target | baseline p50 | speed-up | pass | note | machine |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|:---:|---|---|")
	for _, m := range metrics {
		if m.Skipped != "" {
			fmt.Fprintf(w, "| %s | - | - | - | - | - | skipped | %s | %s |\n", m.Name, m.Skipped, m.Cond)
			continue
		}
		unit := m.Unit
		if unit == "" {
			unit = "ms"
		}
		target := "-"
		if m.Target > 0 {
			target = fmt.Sprintf("%.3f %s", ms(m.Target), unit)
			if m.AtLeast {
				target = ">= " + target
			}
			if m.TargetOnP95 {
				target += " (p95)"
			}
		}
		base, speed := "-", "-"
		if m.Baseline > 0 {
			base = fmt.Sprintf("%.3f %s (%s)", ms(m.Baseline), unit, m.BaselineName)
			speed = fmt.Sprintf("%.1fx", float64(m.Baseline)/float64(m.P50))
			if m.MinSpeedup > 0 {
				speed += fmt.Sprintf(" (>= %.0fx)", m.MinSpeedup)
			}
		}
		pass := "yes"
		if !m.Pass() {
			pass = "**NO**"
		}
		note := m.Note
		if m.Violation != "" {
			note = "**" + m.Violation + "**; " + note
		}
		p50, p95 := fmt.Sprintf("%.3f %s", ms(m.P50), unit), fmt.Sprintf("%.3f %s", ms(m.P95), unit)
		if m.unmeasured() {
			p50, p95 = "-", "-"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", m.Name, p50, p95, target, base, speed, pass, note, m.Cond)
	}
}

// jsonMetric is the JSON shape of one metric in $BENCH_OUT. Durations are
// in milliseconds; a metric with a unit (MB) gives it in "unit" and its
// figures in that unit under the same keys.
type jsonMetric struct {
	P50          float64   `json:"p50_ms"`
	P95          float64   `json:"p95_ms"`
	Target       *float64  `json:"target_ms"`
	TargetOn     string    `json:"target_on,omitempty"`
	AtLeast      bool      `json:"target_is_minimum,omitempty"`
	Baseline     *float64  `json:"baseline_ms,omitempty"`
	BaselineName string    `json:"baseline,omitempty"`
	Unit         string    `json:"unit,omitempty"`
	Note         string    `json:"note,omitempty"`
	Samples      int       `json:"samples"`
	Pass         bool      `json:"pass"`
	Skipped      string    `json:"skipped,omitempty"`
	Violation    string    `json:"violation,omitempty"`
	Conditions   *jsonCond `json:"conditions,omitempty"`
}

// jsonCond is Conditions in $BENCH_OUT: shares in percent, CPU in cores.
type jsonCond struct {
	WindowSec    float64 `json:"window_s"`
	CPUSomePct   float64 `json:"cpu_pressure_some_pct"`
	IOSomePct    float64 `json:"io_pressure_some_pct"`
	IOFullPct    float64 `json:"io_pressure_full_pct"`
	OthersCores  float64 `json:"other_processes_cores"`
	StealCores   float64 `json:"steal_cores"`
	KernelCores  float64 `json:"kernel_threads_cores"`
	OrphansCores float64 `json:"reaped_by_init_cores"`
	Busy         bool    `json:"machine_busy"`
	Missing      string  `json:"missing,omitempty"`
}

// writeJSON writes the metrics to path as an object from metric name to figures.
func writeJSON(path string, metrics []Metric) error {
	out := make(map[string]jsonMetric, len(metrics))
	for _, m := range metrics {
		j := jsonMetric{P50: ms(m.P50), P95: ms(m.P95), Samples: m.Samples, Pass: m.Pass(), Unit: m.Unit, Note: m.Note, Skipped: m.Skipped, Violation: m.Violation}
		if m.Target > 0 {
			t := ms(m.Target)
			j.Target, j.TargetOn, j.AtLeast = &t, "p50", m.AtLeast
			if m.TargetOnP95 {
				j.TargetOn = "p95"
			}
		}
		if m.Baseline > 0 {
			b := ms(m.Baseline)
			j.Baseline, j.BaselineName = &b, m.BaselineName
		}
		if c := m.Cond; c.Window > 0 {
			j.Conditions = &jsonCond{WindowSec: c.Window.Seconds(), CPUSomePct: 100 * c.CPUSome, IOSomePct: 100 * c.IOSome, IOFullPct: 100 * c.IOFull,
				OthersCores: c.Others, StealCores: c.Steal, KernelCores: c.Kernel, OrphansCores: c.Orphans, Busy: c.Busy(), Missing: c.Missing}
		}
		out[m.Name] = j
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // names such as "pause -> paused" stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// writeFileAtomic replaces path with b whole: a bench interrupted while
// writing leaves the previous figures, never half of them.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// stamp gives the suite's conditions to its metrics that have none of
// their own, and says in each miss's note whose miss it was.
func stamp(metrics []Metric, suite Conditions) {
	for i := range metrics {
		m := &metrics[i]
		if m.Cond.Window == 0 {
			m.Cond = suite
		}
		// A verdict is for a figure that missed its target, not for a
		// suite that failed with an error.
		if !m.Pass() && m.Skipped == "" && (m.Target > 0 || m.MinSpeedup > 0) {
			if v := m.Cond.Verdict(); v != "" {
				m.Note = strings.TrimSuffix(v+"; "+m.Note, "; ")
			}
		}
	}
}
