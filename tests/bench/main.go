// Command bench is `make bench`: it measures Hivecrew on this machine against
// its targets and, where there is one, a baseline measured in the same run,
// prints a Markdown table and writes the same figures as JSON to $BENCH_OUT
// (default bench-results.json). It exits non-zero when a metric misses its
// target. BENCH_ONLY=store|guest|sandbox|helper|throughput|context|darwin runs one
// suite; darwin (macOS guests) is measured on a Mac and skipped elsewhere,
// with the reason in its row.
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
		{"context", benchContext},
		{"darwin", benchDarwin},
	} {
		if only := os.Getenv("BENCH_ONLY"); only != "" && only != suite.name {
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
	failed, skipped := 0, 0
	for _, m := range metrics {
		if !m.Pass() {
			failed++
		}
		if m.Skipped != "" {
			skipped++
		}
	}
	fmt.Printf("\n%d metrics, %d missed their target, %d skipped here; %s; figures in %s\n", len(metrics), failed, skipped, time.Since(start).Round(time.Second), out)
	if failed > 0 {
		os.Exit(1)
	}
}
