package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Capacity targets: at each level of concurrent agents, with a provider
// that thinks as a real model does, a step's overhead stays within
// capacityP95 at the 95th percentile, no agent fails, and all the
// sandboxes together hold at most capacityMemMB.
const (
	capacityP95   = 100 * time.Millisecond
	capacityMemMB = 12 << 10
	// capacityGoal is the level the machine should carry.
	capacityGoal = 128
)

// capacityLevel is what one level of the ramp measured.
type capacityLevel struct {
	agents   int
	overhead []time.Duration
	// stepsPerSec is the rate of all agents' steps in the window.
	stepsPerSec float64
	// cpu is the helper's CPU in the window, in cores (1 = one core busy).
	cpu float64
	// pssMB is the proportional set size of every sandbox process.
	pssMB float64
	// errors are agents that stopped working in the window, with why.
	errors []string
	// refused, when set, is why admission left agents waiting.
	refused string
	// setup is the time from the first task's creation until every agent
	// was at work (sandboxes booted, terminals open, two steps made),
	// apart from the window in which steps are measured.
	setup time.Duration
	// cond is what the machine did during the window.
	cond Conditions
	// beside, at besideLevel, is a second window of the same agents while
	// sandboxes start beside them.
	beside *besideWindow
}

// One sandbox's setup must not stall its running neighbours: at
// besideLevel agents a second window measures the same agents while a
// new task's sandbox starts every besideEvery (besideStarts of them),
// each to an agent at work, against the level's own window with none
// starting.
const (
	besideLevel  = 64
	besideStarts = 8
	besideEvery  = 2 * time.Second
)

// besideWindow is what the second window measured.
type besideWindow struct {
	agents   int
	overhead []time.Duration
	// quiet is the same agents' overhead in the level's window.
	quiet []time.Duration
	// errors are started tasks that failed or never reached the model.
	errors []string
	cond   Conditions
}

// why says why the level misses its target ("" if it meets it): the
// first of admission, errors, memory and the step overhead (CPU: the
// helper and the sandboxes share the host's cores).
func (l capacityLevel) why() string {
	switch {
	case l.refused != "":
		return "admission: " + l.refused
	case len(l.errors) > 0:
		return fmt.Sprintf("errors: %d agents stopped (%s)", len(l.errors), l.errors[0])
	case l.pssMB > capacityMemMB:
		return fmt.Sprintf("memory: the sandboxes hold %.1f GB, over %d GB", l.pssMB/1024, capacityMemMB>>10)
	case len(l.overhead) == 0:
		return "errors: no step fell inside the window"
	}
	if _, p95 := percentiles(l.overhead); p95 > capacityP95 {
		return fmt.Sprintf("CPU: p95 step overhead %s over %s with the helper at %.0f%% of a core and %.1f steps/s on %d cores",
			p95.Round(time.Millisecond), capacityP95, 100*l.cpu, l.stepsPerSec, runtime.NumCPU())
	}
	return ""
}

// benchCapacity ramps concurrent agents (BENCH_CAPACITY_LEVELS, default
// 16,32,64,128,256) in real sandboxes against a provider that thinks
// BENCH_THINK (default 3s) before each answer, each agent typing into a
// terminal, and reports for each level the step overhead, steps per
// second, the helper's CPU, the sandboxes' memory and the errors. The ramp
// stops at the first level that misses the target (a higher one would
// only miss it by more), and says why; the last row is the highest level
// that met it.
func benchCapacity(ctx context.Context, _ *slog.Logger) (_ []Metric, err error) {
	levels, err := envLevels("BENCH_CAPACITY_LEVELS", []int{16, 32, 64, 128, 256})
	if err != nil {
		return nil, err
	}
	think := 3 * time.Second
	if v := os.Getenv("BENCH_THINK"); v != "" {
		if think, err = time.ParseDuration(v); err != nil || think < 0 {
			return nil, fmt.Errorf("BENCH_THINK %q: want a duration such as 3s", v)
		}
	}
	p := newProvider()
	p.think = think
	defer p.close()
	h, err := startHelper()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.close()) }()
	slots := slices.Max(levels)
	if slices.Contains(levels, besideLevel) {
		slots = max(slots, besideLevel+besideStarts) // the starts beside the level's agents
	}
	if err := h.configure(ctx, p, map[string]any{"maxConcurrentVMs": slots, "warmPoolSize": 0, "vmMemoryMB": 512, "vmCpuCount": 1}); err != nil {
		return nil, err
	}
	var out []Metric
	best := 0
	for i, n := range levels {
		fmt.Fprintf(os.Stderr, "bench: capacity: %d agents...\n", n)
		l, err := capacityRun(ctx, h, p, n, think)
		if err != nil {
			// The levels measured so far are kept (main writes them).
			return out, fmt.Errorf("%d agents: %w", n, err)
		}
		out = append(out, l.metrics(think)...)
		if l.beside != nil {
			out = append(out, l.beside.metric())
		}
		why := l.why()
		if why != "" {
			for _, rest := range levels[i+1:] {
				out = append(out, Metric{Name: capacityName(rest, think), Skipped: fmt.Sprintf("not run: %d agents already missed the target (%s)", n, why)})
			}
			break
		}
		best = n
	}
	out = append(out, Metric{Name: "capacity: most concurrent agents meeting the target", P50: Quantity(float64(best)), P95: Quantity(float64(best)),
		Target: Quantity(capacityGoal), AtLeast: true, Unit: "agents", Samples: len(levels),
		Note: fmt.Sprintf("p95 step overhead <= %s, no errors, sandboxes <= %d GB, with a provider thinking %s a step; a macOS host runs at most 2 macOS guests, a Firecracker or container desktop costs hundreds of MB an agent",
			capacityP95, capacityMemMB>>10, think)})
	return out, nil
}

func capacityName(n int, think time.Duration) string {
	return fmt.Sprintf("capacity: %d agents, step overhead (provider thinks %s)", n, think)
}

// metrics are the level's rows: the step overhead and the sandboxes'
// memory. Levels up to the goal carry the targets; a level past it is
// measured to find the machine's limit, with why it would miss them in
// its note, and fails nothing, even when its agents never got to work.
func (l capacityLevel) metrics(think time.Duration) []Metric {
	why := l.why()
	beyond := l.agents > capacityGoal
	over := Metric{Name: capacityName(l.agents, think), Samples: len(l.overhead), Chart: "capacity", X: float64(l.agents), Cond: l.cond}
	setup := fmt.Sprintf("setup %s (booting %d sandboxes until each agent made two steps)", l.setup.Round(time.Second), l.agents)
	if len(l.overhead) == 0 {
		if beyond {
			over.Note = fmt.Sprintf("the machine's limit, past the goal of %d agents (no target): %s; %s", capacityGoal, why, setup)
		} else {
			over.Target, over.TargetOnP95, over.Violation, over.Note = capacityP95, true, why, setup
		}
		return []Metric{over}
	}
	over.P50, over.P95 = percentiles(l.overhead)
	over.Note = fmt.Sprintf("p99 %s; %.1f steps/s; helper CPU %.0f%% of a core; sandboxes %.0f MB (%.1f MB an agent); %d errors; %s, then a %s window",
		rank(l.overhead, 0.99).Round(time.Millisecond), l.stepsPerSec, 100*l.cpu, l.pssMB, l.pssMB/float64(l.agents), len(l.errors), setup, l.cond.Window.Round(time.Second))
	mem := Metric{Name: fmt.Sprintf("capacity: %d agents, memory of all sandboxes (PSS)", l.agents), P50: Quantity(l.pssMB), P95: Quantity(l.pssMB),
		Unit: "MB", Samples: 1, Chart: "capacity-memory", X: float64(l.agents), Cond: l.cond,
		Note: fmt.Sprintf("%.1f MB an agent: guest agent, Xvfb, D-Bus, window manager, xterm", l.pssMB/float64(l.agents))}
	if beyond {
		if why != "" {
			over.Note = fmt.Sprintf("past the goal of %d agents, no target; it would miss it: %s; %s", capacityGoal, why, over.Note)
		}
		return []Metric{over, mem}
	}
	over.Target, over.TargetOnP95, over.Violation = capacityP95, true, why
	mem.Target = Quantity(capacityMemMB)
	return []Metric{over, mem}
}

// capacityRun starts n writing agents, waits until each has made two
// steps, measures a window of several think times, and stops them all.
func capacityRun(ctx context.Context, h *helperProc, p *provider, n int, think time.Duration) (l capacityLevel, err error) {
	l.agents = n
	markers := make([]string, n)
	ids := make([]string, n)
	tag := fmt.Sprintf("c%d", n)
	for i := range markers {
		markers[i] = fmt.Sprintf("[[%s_%03d]]", tag, i)
		p.set(markers[i], writing)
		t, err := h.create(ctx, "Write a report "+markers[i])
		if err != nil {
			return l, err
		}
		ids[i] = t.ID
	}
	defer func() {
		if _, stopErr := h.unix.StopAll(ctx); stopErr != nil {
			err = errors.Join(err, stopErr)
			return
		}
		err = errors.Join(err, h.waitNoVMs(ctx, 3*time.Minute))
	}()
	// Every agent is at work: its terminal open and typed into. Booting n
	// sandboxes takes a while on 2 cores; an agent admission keeps waiting
	// (no other agent started meanwhile) says why, and one that ended or
	// never got to work is the level's error, with its reason.
	created := time.Now()
	ready := created.Add(time.Duration(n)*time.Second + 2*time.Minute)
	working, progressed := 0, time.Now()
	for i, m := range markers {
		for p.count(m) < 3 {
			now := time.Now()
			if now.After(ready) || now.Sub(progressed) > 30*time.Second {
				t, err := h.unix.Task(ctx, ids[i])
				if err != nil {
					return l, err
				}
				// Admission's reasons start "waiting for" (a slot,
				// memory, CPUs); a VM being booted is on its way.
				if (t.Status == "waitingForVM" || t.Status == "queued") && strings.HasPrefix(t.StatusReason, "waiting for") {
					l.refused = fmt.Sprintf("%d of %d agents at work; the others wait: %s", working, n, t.StatusReason)
					return l, nil
				}
				if terminal(t) || now.After(ready) {
					l.errors = append(l.errors, fmt.Sprintf("%s made %d steps in %s and is %s: %s", m, p.count(m), now.Sub(created).Round(time.Second), t.Status, h.why(ctx, t)))
					return l, nil
				}
				progressed = now // it is on its way: booting or stepping
			}
			if err := ctx.Err(); err != nil {
				return l, err
			}
			time.Sleep(20 * time.Millisecond)
		}
		working, progressed = working+1, time.Now()
	}
	l.setup = time.Since(created)
	window := max(6*think, 15*time.Second)
	start := time.Now()
	machine := startConditions()
	t0, err := cpuTicks(h.pid)
	if err != nil {
		return l, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return l, ctx.Err()
	}
	t1, err := cpuTicks(h.pid)
	if err != nil {
		return l, err
	}
	l.cond = machine.stop()
	end := time.Now()
	l.cpu = float64(t1-t0) / clockTicks / end.Sub(start).Seconds()
	l.pssMB = float64(treePSS(h.pid)-pssKB(h.pid)) / 1024
	var steps int
	l.overhead, steps = windowOverhead(p, markers, start, end)
	l.stepsPerSec = float64(steps) / end.Sub(start).Seconds()
	for i, id := range ids {
		t, err := h.unix.Task(ctx, id)
		if err != nil {
			return l, err
		}
		if t.Status != "running" {
			l.errors = append(l.errors, fmt.Sprintf("%s is %s: %s", markers[i], t.Status, t.StatusReason))
		}
	}
	if n == besideLevel {
		b, err := besideRun(ctx, h, p, markers, tag, window)
		if err != nil {
			return l, err
		}
		b.agents, b.quiet = n, l.overhead
		l.beside = &b
	}
	return l, nil
}

// windowOverhead returns the step overheads of the agents carrying
// markers whose requests reached the provider in [start, end), after an
// answer sent in it, and how many requests reached it then.
func windowOverhead(p *provider, markers []string, start, end time.Time) (overhead []time.Duration, steps int) {
	for _, m := range markers {
		ex := p.exchanges(m)
		for i, e := range ex {
			if e.in.Before(start) || !e.in.Before(end) {
				continue
			}
			steps++
			if i > 0 && !ex[i-1].out.IsZero() && !ex[i-1].out.Before(start) {
				overhead = append(overhead, e.in.Sub(ex[i-1].out))
			}
		}
	}
	return overhead, steps
}

// besideRun measures the agents carrying markers for window while a new
// task starts every besideEvery beside them; each new task's agent must
// reach the model before the window ends.
func besideRun(ctx context.Context, h *helperProc, p *provider, markers []string, tag string, window time.Duration) (b besideWindow, err error) {
	fmt.Fprintf(os.Stderr, "bench: capacity: %d agents while %d sandboxes start beside them...\n", len(markers), besideStarts)
	start := time.Now()
	machine := startConditions()
	wait := func(until time.Time) error {
		select {
		case <-time.After(time.Until(until)):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var started, ids []string
	for i := range besideStarts {
		if err := wait(start.Add(time.Duration(i) * besideEvery)); err != nil {
			return b, err
		}
		m := fmt.Sprintf("[[%s_beside%d]]", tag, i)
		p.set(m, writing)
		t, err := h.create(ctx, "Write a report "+m)
		if err != nil {
			return b, err
		}
		started, ids = append(started, m), append(ids, t.ID)
	}
	if err := wait(start.Add(window)); err != nil {
		return b, err
	}
	end := time.Now()
	b.cond = machine.stop()
	b.overhead, _ = windowOverhead(p, markers, start, end)
	for i, id := range ids {
		t, err := h.unix.Task(ctx, id)
		if err != nil {
			return b, err
		}
		if terminal(t) || p.count(started[i]) == 0 {
			b.errors = append(b.errors, fmt.Sprintf("%s, started %s before the window's end, made %d requests and is %s: %s",
				started[i], (window-time.Duration(i)*besideEvery).Round(time.Second), p.count(started[i]), t.Status, h.why(ctx, t)))
		}
	}
	return b, nil
}

// metric is the second window's row: the capacity target, beside the
// same agents' figures with no sandbox starting.
func (b besideWindow) metric() Metric {
	m := Metric{Name: fmt.Sprintf("capacity: %d agents, step overhead while a sandbox starts every %s beside them", b.agents, besideEvery),
		Target: capacityP95, TargetOnP95: true, Samples: len(b.overhead), Cond: b.cond, BaselineName: "the same agents, none starting"}
	if len(b.overhead) == 0 {
		m.Violation = "errors: no step fell inside the window"
		return m
	}
	m.P50, m.P95 = percentiles(b.overhead)
	quiet50, quiet95 := percentiles(b.quiet)
	m.Baseline = quiet50
	m.Note = fmt.Sprintf("%d sandboxes started, one every %s, each to an agent at work; p99 %s; the same agents with none starting: p95 %s",
		besideStarts, besideEvery, rank(b.overhead, 0.99).Round(time.Millisecond), quiet95.Round(time.Millisecond))
	if len(b.errors) > 0 {
		m.Violation = fmt.Sprintf("errors: %d started tasks (%s)", len(b.errors), b.errors[0])
	} else if m.P95 > capacityP95 {
		m.Violation = fmt.Sprintf("a start stalls its neighbours: p95 step overhead %s over %s while sandboxes start (%s with none starting)",
			m.P95.Round(time.Millisecond), capacityP95, quiet95.Round(time.Millisecond))
	}
	return m
}

// waitNoVMs waits until the helper runs no VM.
func (h *helperProc) waitNoVMs(ctx context.Context, within time.Duration) error {
	return h.waitVMs(ctx, "end of every VM after stop-all", within, func(vms []wire.VM) bool { return len(vms) == 0 })
}

// envLevels reads a comma-separated list of agent counts from name.
func envLevels(name string, def []int) ([]int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%s %q: want agent counts such as 16,32,64", name, v)
		}
		out = append(out, n)
	}
	return out, nil
}
