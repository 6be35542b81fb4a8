// Command bench is `make bench`: it measures Hivecrew on this machine against
// its targets and, where there is one, a baseline measured in the same run,
// prints a Markdown table and writes the same figures as JSON to $BENCH_OUT
// (default bench-results.json). It exits non-zero when a metric misses its
// target. BENCH_ONLY=store|guest|sandbox|helper|throughput|capacity|context|darwin|soak
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
	"fmt"
	"log/slog"
	"os"
	"time"
)

func main() {
	out := os.Getenv("BENCH_OUT")
	if out == "" {
		out = "bench-results.json"
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()

	var metrics []Metric
	for _, suite := range []struct {
		name string
		run  func(context.Context, *slog.Logger) ([]Metric, error)
	}{
		{"store", benchStore},
		{"guest", benchGuest},
		{"sandbox", benchSandbox},
		{"helper", benchHelper},
		{"throughput", benchThroughput},
		{"capacity", benchCapacity},
		{"context", benchContext},
		{"darwin", benchDarwin},
		{"soak", benchSoak},
	} {
		only := os.Getenv("BENCH_ONLY")
		// The soak (15 minutes) runs only when asked for.
		if only != "" && only != suite.name || only == "" && suite.name == "soak" {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s...\n", suite.name)
		t0 := time.Now()
		ms, err := suite.run(ctx, log)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", suite.name, err)
			os.Exit(1)
		}
		metrics = append(metrics, ms...)
		fmt.Fprintf(os.Stderr, "bench: %s done in %s\n", suite.name, time.Since(t0).Round(time.Millisecond))
	}

	writeTable(os.Stdout, metrics)
	if err := writeJSON(out, metrics); err != nil {
		fmt.Fprintf(os.Stderr, "bench: write %s: %v\n", out, err)
		os.Exit(1)
	}
	report := os.Getenv("BENCH_REPORT")
	if report == "" {
		report = "bench-report.html"
	}
	if err := writeHTML(report, metrics, time.Since(start)); err != nil {
		fmt.Fprintf(os.Stderr, "bench: write %s: %v\n", report, err)
		os.Exit(1)
	}
	failed, skipped := 0, 0
	for _, m := range metrics {
		if !m.Pass() {
			failed++
		}
		if m.Skipped != "" {
			skipped++
		}
	}
	fmt.Printf("\n%d metrics, %d missed their target, %d skipped here; %s; figures in %s, report in %s\n", len(metrics), failed, skipped, time.Since(start).Round(time.Second), out, report)
	if failed > 0 {
		os.Exit(1)
	}
}
