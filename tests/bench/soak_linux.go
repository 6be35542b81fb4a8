package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/wire"
)

// soakSample is the helper's state after some tasks.
type soakSample struct {
	tasks                 int
	rssMB, heapMB         float64
	fds, goroutines       int
	dbMB, dataMB, traceMB float64
	// kinds counts the open descriptors by what they are (socket, pipe,
	// anon_inode, or the file's name).
	kinds map[string]int
}

// benchSoak runs BENCH_SOAK_TASKS (default 1,000) tasks back to back
// through the API, 4 at a time, each an agent of 5 steps in a fresh
// sandbox, and samples the helper every 100 tasks: its RSS, Go heap, open
// descriptors and goroutines, the SQLite database and the data folder
// (with and without the traces). Every task must end completed; after the
// first 100 tasks (the caches and pools filled), RSS, descriptors and
// goroutines may grow by at most 10%. Tasks go in batches of 100 and the
// helper is sampled between them, settled. The database and the traces grow
// with the tasks' own rows and sessions: their growth per task is
// reported. Not part of the default run (BENCH_ONLY=soak).
func benchSoak(ctx context.Context, _ *slog.Logger) (_ []Metric, err error) {
	total := 1000
	if v := os.Getenv("BENCH_SOAK_TASKS"); v != "" {
		if total, err = strconv.Atoi(v); err != nil || total < 200 || total%100 != 0 {
			return nil, fmt.Errorf("BENCH_SOAK_TASKS %q: want a multiple of 100, at least 200", v)
		}
	}
	const parallel, steps = 4, 5
	p := newProvider()
	defer p.close()
	h, err := startHelper()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.close()) }()
	if err := h.configure(ctx, p, map[string]any{"maxConcurrentVMs": parallel, "warmPoolSize": parallel, "vmMemoryMB": 512, "vmCpuCount": 1}); err != nil {
		return nil, err
	}
	p.set("[[soak]]", fiveSteps)
	var (
		next      atomic.Int64
		mu        sync.Mutex // guards failed and samples
		failed    []string
		samples   []soakSample
		durations = make([]time.Duration, total)
	)
	sample := func(n int) error {
		s, err := h.soakSample(ctx, n)
		if err != nil {
			return err
		}
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
		fmt.Fprintf(os.Stderr, "bench: soak: %d tasks: RSS %.0f MB, %d fds, %d goroutines, db %.1f MB\n", n, s.rssMB, s.fds, s.goroutines, s.dbMB)
		return nil
	}
	if err := sample(0); err != nil {
		return nil, err
	}
	start := time.Now()
	// Tasks go in batches of 100, 4 at a time; between batches the helper
	// settles (the tasks' VMs gone, the warm pool refilled) and is sampled,
	// so that a sample shows what the helper keeps, not the 4 tasks in
	// flight.
	for batch := 0; batch < total/100; batch++ {
		var wg sync.WaitGroup
		errs := make(chan error, parallel)
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= (batch+1)*100 {
						return
					}
					t0 := time.Now()
					t, err := h.create(ctx, fmt.Sprintf("Write a note, %d of %d [[soak]]", i+1, total))
					if err != nil {
						errs <- err
						return
					}
					end, err := h.waitTask(ctx, t.ID, "the end of a soak task", 2*time.Minute, terminal)
					if err != nil {
						errs <- err
						return
					}
					durations[i] = time.Since(t0)
					if end.Status != "completed" {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("task %d %s: %s", i+1, end.Status, end.StatusReason))
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return nil, err
		}
		next.Store(int64((batch + 1) * 100))
		if err := h.waitSettled(ctx, parallel, time.Minute); err != nil {
			return nil, err
		}
		if err := sample((batch + 1) * 100); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(start)
	return soakMetrics(samples, failed, durations, total, elapsed, steps), nil
}

// fiveSteps is a soak task's script: it opens xterm, types four lines,
// and is done.
func fiveSteps(n int, check bool) (openai.ChatCompletionMessage, <-chan struct{}) {
	if n <= 5 && !check {
		return writing(n, check)
	}
	return finish(n, check)
}

// soakMetrics turns the samples into rows: completed tasks, the growth of
// RSS, descriptors and goroutines after the first 100 tasks (target 10%),
// and the database's and traces' growth per task; the samples are the
// rows' series for the report's chart.
func soakMetrics(samples []soakSample, failed []string, durations []time.Duration, total int, elapsed time.Duration, steps int) []Metric {
	var at100 soakSample
	for _, s := range samples {
		if s.tasks == 100 {
			at100 = s
		}
	}
	last := samples[len(samples)-1]
	series := func(f func(soakSample) float64) []Point {
		out := make([]Point, len(samples))
		for i, s := range samples {
			out[i] = Point{X: float64(s.tasks), Y: f(s)}
		}
		return out
	}
	grew := func() string {
		var out []string
		for k, n := range last.kinds {
			if d := n - at100.kinds[k]; d != 0 {
				out = append(out, fmt.Sprintf("%s %+d", k, d))
			}
		}
		for k, n := range at100.kinds {
			if _, ok := last.kinds[k]; !ok {
				out = append(out, fmt.Sprintf("%s %+d", k, -n))
			}
		}
		slices.Sort(out)
		if len(out) == 0 {
			return "the same kinds as after 100 tasks"
		}
		return "since 100 tasks: " + strings.Join(out, ", ")
	}
	growth := func(name, unit string, f func(soakSample) float64) Metric {
		base, peak := f(at100), f(at100)
		for _, s := range samples {
			if s.tasks >= 100 {
				peak = max(peak, f(s))
			}
		}
		g := 100 * (peak - base) / max(base, 1e-9)
		return Metric{Name: fmt.Sprintf("soak: %s growth after 100 tasks", name), P50: Quantity(g), P95: Quantity(g), Target: Quantity(10), Unit: "%",
			Samples: len(samples), Chart: "soak", Series: series(f), SeriesUnit: unit,
			Note: fmt.Sprintf("%.1f %s after 100 tasks, at most %.1f %s after; %.1f %s at the end", base, unit, peak, unit, f(last), unit)}
	}
	completed := total - len(failed)
	done := Metric{Name: fmt.Sprintf("soak: %d tasks of %d steps, 4 at a time, completed", total, steps), P50: Quantity(float64(completed)), P95: Quantity(float64(completed)),
		Target: Quantity(float64(total)), AtLeast: true, Unit: "tasks", Samples: total,
		Note: fmt.Sprintf("in %s (%.1f tasks/min)", elapsed.Round(time.Second), float64(total)/elapsed.Minutes())}
	if len(failed) > 0 {
		done.Violation = fmt.Sprintf("%d tasks did not complete; first: %s", len(failed), failed[0])
	}
	d50, d95 := percentiles(durations)
	perTask := func(f func(soakSample) float64) float64 {
		return (f(last) - f(at100)) / float64(max(last.tasks-100, 1)) * 1024
	}
	return []Metric{
		done,
		{Name: "soak: task time, submit to end", P50: d50, P95: d95, Samples: total, Note: "a fresh sandbox each (4 warm), 5 agent steps, the completion check, outputs"},
		growth("helper RSS", "MB", func(s soakSample) float64 { return s.rssMB }),
		withNote(growth("open descriptors but the database's", "fds", func(s soakSample) float64 { return float64(s.fds - s.dbFDs()) }),
			fmt.Sprintf("the database's %d at the end (its connection pool: up to 8 connections, kept open); %s", last.dbFDs(), grew())),
		growth("goroutines", "goroutines", func(s soakSample) float64 { return float64(s.goroutines) }),
		{Name: "soak: SQLite database per task", P50: Quantity(perTask(func(s soakSample) float64 { return s.dbMB })), P95: Quantity(perTask(func(s soakSample) float64 { return s.dbMB })),
			Unit: "KB", Samples: len(samples), Chart: "soak", Series: series(func(s soakSample) float64 { return s.dbMB }), SeriesUnit: "MB",
			Note: fmt.Sprintf("the task rows and their events themselves; %.1f MB at the end", last.dbMB)},
		{Name: "soak: data folder without traces and VMs per task", P50: Quantity(perTask(func(s soakSample) float64 { return s.dataMB - s.traceMB - s.dbMB })),
			P95: Quantity(perTask(func(s soakSample) float64 { return s.dataMB - s.traceMB - s.dbMB })), Unit: "KB", Samples: len(samples), Chart: "soak",
			Series: series(func(s soakSample) float64 { return s.dataMB - s.traceMB - s.dbMB }), SeriesUnit: "MB",
			Note: fmt.Sprintf("traces (Sessions/) hold %.0f MB at the end, %.0f KB a task; trace retention (traceRetentionDays) bounds them", last.traceMB, perTask(func(s soakSample) float64 { return s.traceMB }))},
	}
}

// soakSample reads the helper's state after n tasks.
func (h *helperProc) soakSample(ctx context.Context, n int) (soakSample, error) {
	st, err := h.unix.Status(ctx)
	if err != nil {
		return soakSample{}, err
	}
	if st.Runtime.Goroutines == 0 {
		return soakSample{}, errors.New("the helper reports no runtime figures (GET /system/status runtime): bin/hivecrew-helper is older than the bench; run make build")
	}
	kb, err := rssKB(h.pid)
	if err != nil {
		return soakSample{}, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", h.pid))
	if err != nil {
		return soakSample{}, err
	}
	s := soakSample{tasks: n, rssMB: float64(kb) / 1024, heapMB: st.Runtime.HeapAllocMB, fds: len(fds), goroutines: st.Runtime.Goroutines, kinds: map[string]int{}}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", h.pid, fd.Name()))
		if err != nil {
			continue
		}
		kind, _, _ := strings.Cut(target, ":")
		if strings.HasPrefix(target, "/") {
			kind = filepath.Base(target)
		}
		s.kinds[kind]++
	}
	for _, f := range []string{"hivecrew.db", "hivecrew.db-wal"} {
		if fi, err := os.Stat(filepath.Join(h.home, f)); err == nil {
			s.dbMB += float64(fi.Size()) / (1 << 20)
		}
	}
	s.dataMB = float64(duBytes(h.home, "VMs")) / (1 << 20)
	s.traceMB = float64(duBytes(filepath.Join(h.home, "Sessions"))) / (1 << 20)
	return s, nil
}

// duBytes sums the disk space the regular files under dir take (their
// allocated blocks: a VM's disk image is sparse), leaving out the folders
// named in skip (relative to dir).
func duBytes(dir string, skip ...string) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && slices.Contains(skip, strings.TrimPrefix(path, dir+"/")) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}

// waitSettled waits until the helper runs no task's VM and its warm pool
// holds warm ready VMs, then a moment for connections to close.
func (h *helperProc) waitSettled(ctx context.Context, warm int, within time.Duration) error {
	err := h.waitVMs(ctx, fmt.Sprintf("settled helper (%d warm VMs ready, no other)", warm), within, func(vms []wire.VM) bool {
		return len(vms) == warm && !slices.ContainsFunc(vms, func(v wire.VM) bool { return v.State != "ready" })
	})
	if err == nil {
		time.Sleep(time.Second)
	}
	return err
}

// withNote adds to a metric's note.
func withNote(m Metric, more string) Metric {
	m.Note += "; " + more
	return m
}

// dbFDs counts the descriptors of the SQLite database (its file, journal
// and shared memory), which grow with the store's connection pool (a
// fixed bound), not with the tasks.
func (s soakSample) dbFDs() int {
	return s.kinds["hivecrew.db"] + s.kinds["hivecrew.db-wal"] + s.kinds["hivecrew.db-shm"]
}
