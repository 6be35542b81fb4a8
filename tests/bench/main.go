// Command bench is `make bench`: it measures Hivecrew on this machine against
// its targets and, where there is one, a baseline measured in the same run,
// prints a Markdown table and writes the same figures as JSON to $BENCH_OUT
// (default bench-results.json). It exits non-zero when a metric misses its
// target. The table and the report are written whatever happens: each
// suite's rows as it ends, a suite that fails as a row with its reason,
// and an interrupted bench with what it measured. Every row says what the
// machine was doing meanwhile (Conditions), so a miss says whether it was
// the product's or the machine's. BENCH_ONLY=store|guest|sandbox|helper|throughput|capacity|context|darwin|soak
// runs one suite; darwin (macOS guests) is measured on a Mac and skipped
// elsewhere, with the reason in its row; soak runs only when asked for. It
// also writes an HTML report ($BENCH_REPORT, default bench-report.html):
// the table, the capacity curve and the soak's resources as inline SVG.
//
// The helper and throughput suites drive the real hivecrew-helper (bin/,
// from make build) through its API with real sandboxes and a scripted
// provider that answers at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// suite is one part of the bench.
type suite struct {
	name string
	run  func(context.Context, *slog.Logger) ([]Metric, error)
}

var suites = []suite{
	{"store", benchStore},
	{"guest", benchGuest},
	{"sandbox", benchSandbox},
	{"helper", benchHelper},
	{"throughput", benchThroughput},
	{"capacity", benchCapacity},
	{"context", benchContext},
	{"darwin", benchDarwin},
	{"soak", benchSoak},
}

// selected is the suites BENCH_ONLY asks for; the soak (15 minutes) runs
// only when asked for.
func selected(only string) ([]suite, error) {
	var out []suite
	for _, s := range suites {
		if only == s.name || only == "" && s.name != "soak" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("BENCH_ONLY=%q names no suite", only)
	}
	return out, nil
}

func main() {
	out := or(os.Getenv("BENCH_OUT"), "bench-results.json")
	report := or(os.Getenv("BENCH_REPORT"), "bench-report.html")
	run, err := selected(os.Getenv("BENCH_ONLY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// The first interrupt ends the suite that runs (its sandboxes and
	// helper are cleaned up) and writes what was measured; a second one
	// quits at once, leaving the report of the suites already done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
		fmt.Fprintln(os.Stderr, "bench: interrupted: ending this suite and writing the report (interrupt again to quit now)")
	}()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()

	// Each suite's rows are written as it ends, so a bench that dies
	// later keeps them; a suite that fails is a row with its reason.
	var metrics []Metric
	// unwritten is what the last save could not write: the summary says
	// so, and the bench fails, rather than pointing at missing files.
	var unwritten []string
	save := func(status string) {
		unwritten = nil
		if err := writeJSON(out, metrics); err != nil {
			fmt.Fprintf(os.Stderr, "bench: write %s: %v\n", out, err)
			unwritten = append(unwritten, fmt.Sprintf("%s (%v)", out, err))
		}
		if err := writeHTML(report, metrics, time.Since(start), status); err != nil {
			fmt.Fprintf(os.Stderr, "bench: write %s: %v\n", report, err)
			unwritten = append(unwritten, fmt.Sprintf("%s (%v)", report, err))
		}
	}
	status := ""
	for i, s := range run {
		if ctx.Err() != nil {
			for _, rest := range run[i:] {
				metrics = append(metrics, Metric{Name: rest.name + ": suite", Skipped: "not run: the bench was interrupted"})
			}
			status = fmt.Sprintf("Interrupted: %d of %d suites ran.", i, len(run))
			break
		}
		fmt.Fprintf(os.Stderr, "bench: %s...\n", s.name)
		t0 := time.Now()
		cond := startConditions()
		ms, err := runSuite(ctx, s, log)
		c := cond.stop()
		if err != nil {
			ms = append(ms, failed(ctx, s.name, err, len(ms)))
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
		}
		stamp(ms, c)
		metrics = append(metrics, ms...)
		fmt.Fprintf(os.Stderr, "bench: %s done in %s (%s)\n", s.name, time.Since(t0).Round(time.Millisecond), c)
		if i+1 < len(run) {
			var rest []string
			for _, r := range run[i+1:] {
				rest = append(rest, r.name)
			}
			save(fmt.Sprintf("Partial: written after %d of %d suites; still to run: %s.", i+1, len(run), strings.Join(rest, ", ")))
		}
	}
	if ctx.Err() != nil && status == "" {
		status = "Interrupted during the last suite: its figures may be cut short."
	}

	writeTable(os.Stdout, metrics)
	save(status)
	missed, skipped := 0, 0
	for _, m := range metrics {
		if !m.Pass() {
			missed++
		}
		if m.Skipped != "" {
			skipped++
		}
	}
	fmt.Printf("\n%d metrics, %d missed their target, %d skipped here; %s; figures in %s, report in %s\n", len(metrics), missed, skipped, time.Since(start).Round(time.Second), out, report)
	if status != "" {
		fmt.Println(status)
	}
	if len(unwritten) > 0 {
		fmt.Printf("NOT WRITTEN: %s; the table above is all there is of this run\n", strings.Join(unwritten, ", "))
	}
	if missed > 0 || status != "" || len(unwritten) > 0 {
		os.Exit(1)
	}
}

// runSuite runs s, turning a panic into its error.
func runSuite(ctx context.Context, s suite, log *slog.Logger) (ms []Metric, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return s.run(ctx, log)
}

// failed is the row of a suite that ended in err: never without a reason.
func failed(ctx context.Context, name string, err error, measured int) Metric {
	why := strings.TrimSpace(err.Error())
	if why == "" {
		why = fmt.Sprintf("an error with no text (%T)", err)
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		why = "interrupted: " + why
	}
	m := Metric{Name: name + ": suite", Violation: "the suite failed: " + why}
	if measured > 0 {
		m.Note = fmt.Sprintf("the %d rows before this one are what it measured until then", measured)
	}
	return m
}
