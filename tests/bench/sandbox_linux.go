package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
)

var hostTemplate = vm.Template{ID: "host", Kind: vm.KindHost}

// benchSandbox measures the Linux sandbox backend: cold start (clone, boot,
// the guest's hello) of the host template, a warm acquire from the pool,
// memory per idle sandbox, and 16 sandboxes started at once on this machine.
func benchSandbox(ctx context.Context, log *slog.Logger) ([]Metric, error) {
	data, err := os.MkdirTemp("", "hc-bench-vm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(data)
	agent, err := filepath.Abs("bin/hivecrew-guestagent")
	if err != nil {
		return nil, err
	}
	b, err := sandbox.New(sandbox.Config{AgentBinary: agent, DataDir: data, Log: log, AgentLogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	var out []Metric

	// Cold start, one at a time; the deletes are not timed.
	const coldN = 20
	var colds []time.Duration
	for i := range coldN + 2 {
		t0 := time.Now()
		m, c, err := boot(ctx, b, data, fmt.Sprintf("cold%d", i), log)
		if err != nil {
			return nil, err
		}
		if i >= 2 { // two warm-up runs
			colds = append(colds, time.Since(t0))
		}
		c.Close()
		if err := m.Delete(ctx); err != nil {
			return nil, err
		}
	}
	p50, p95 := percentiles(colds)
	out = append(out, Metric{Name: "sandbox: cold start (clone + boot + hello)", P50: p50, P95: p95, Target: 300 * time.Millisecond, Samples: coldN})

	// Warm acquire: the pool keeps one VM ready; time Acquire alone.
	warm, err := benchWarm(ctx, b, data, log)
	if err != nil {
		return nil, err
	}
	out = append(out, warm)

	// Memory of idle sandboxes, and 16 at once.
	mem, concurrent, err := benchConcurrent(ctx, b, data, log)
	if err != nil {
		return nil, err
	}
	return append(out, mem, concurrent), nil
}

func boot(ctx context.Context, b *sandbox.Backend, data, id string, log *slog.Logger) (vm.Machine, *guest.Client, error) {
	m, err := b.Create(ctx, vm.Spec{ID: id, Template: hostTemplate, Dir: filepath.Join(data, id), CPUs: 1, MemoryMB: 1024, Network: vm.NetworkOffline})
	if err != nil {
		return nil, nil, err
	}
	if err := m.Start(ctx); err != nil {
		m.Delete(ctx)
		return nil, nil, err
	}
	c, err := guest.Connect(ctx, guest.Config{Dial: m.DialGuest, Key: m.GuestKey, Log: log})
	if err != nil {
		m.Delete(ctx)
		return nil, nil, err
	}
	return m, c, nil
}

func benchWarm(ctx context.Context, b *sandbox.Backend, data string, log *slog.Logger) (Metric, error) {
	p, err := pool.New(pool.Config{Backend: b, Dir: filepath.Join(data, "pool"), Log: log,
		Limits: func() pool.Limits {
			return pool.Limits{MaxConcurrent: 4, WarmSize: 1, IdleTimeout: time.Hour, CPUs: 1, MemoryMB: 1024,
				WarmTemplate: hostTemplate, WarmNetwork: vm.NetworkOffline}
		}})
	if err != nil {
		return Metric{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(rctx); close(done) }()
	defer func() { cancel(); <-done; p.Close(ctx) }()
	ready := func() error {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for _, i := range p.Snapshot() {
				if i.State == pool.StateReady {
					return nil
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		return fmt.Errorf("no warm VM within 30 s")
	}
	const n = 20
	samples := make([]time.Duration, 0, n)
	for range n {
		if err := ready(); err != nil {
			return Metric{}, err
		}
		t0 := time.Now()
		l, err := p.Acquire(ctx, pool.Request{Template: hostTemplate, Network: vm.NetworkOffline})
		if err != nil {
			return Metric{}, err
		}
		samples = append(samples, time.Since(t0))
		l.Release(ctx)
	}
	p50, p95 := percentiles(samples)
	return Metric{Name: "sandbox: warm acquire", P50: p50, P95: p95, Target: 10 * time.Millisecond, Samples: n}, nil
}

// benchConcurrent starts 16 sandboxes at once, measures each one's start
// under that load, and the memory (PSS) their processes hold once idle.
func benchConcurrent(ctx context.Context, b *sandbox.Backend, data string, log *slog.Logger) (Metric, Metric, error) {
	const n = 16
	ms := make([]vm.Machine, n)
	cs := make([]*guest.Client, n)
	starts := make([]time.Duration, n)
	defer func() {
		var wg sync.WaitGroup
		for i := range ms {
			if ms[i] != nil {
				wg.Add(1)
				go func() { defer wg.Done(); cs[i].Close(); ms[i].Delete(ctx) }()
			}
		}
		wg.Wait()
	}()
	t0 := time.Now()
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			s := time.Now()
			m, c, err := boot(ctx, b, data, fmt.Sprintf("many%d", i), log)
			if err != nil {
				return err
			}
			ms[i], cs[i], starts[i] = m, c, time.Since(s)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Metric{}, Metric{}, fmt.Errorf("16 concurrent sandboxes: %w", err)
	}
	all := time.Since(t0)
	time.Sleep(2 * time.Second) // let them settle to idle
	var mems []time.Duration
	for _, m := range ms {
		pid := m.(*sandbox.Machine).AgentPID()
		mb := float64(treePSS(pid)) / 1024
		mems = append(mems, Quantity(mb))
	}
	p50, p95 := percentiles(starts)
	concurrent := Metric{Name: "sandbox: start with 16 starting at once", P50: p50, P95: p95, Samples: n,
		Note: fmt.Sprintf("all 16 answered hello in %s", all.Round(time.Millisecond))}
	m50, m95 := percentiles(mems)
	mem := Metric{Name: "sandbox: memory per idle sandbox (PSS)", P50: m50, P95: m95, Unit: "MB", Samples: n,
		Note: "guest agent + Xvfb + D-Bus + openbox"}
	return mem, concurrent, nil
}

// pssKB is one process's proportional set size in kB, without its
// children (0 if it is gone).
func pssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	return 0
}

// treePSS sums the proportional set size (kB) of pid and its descendants.
func treePSS(pid int) int {
	if pid <= 0 {
		return 0
	}
	total := pssKB(pid)
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, k := range strings.Fields(string(kids)) {
			c, _ := strconv.Atoi(k)
			total += treePSS(c)
		}
	}
	return total
}
