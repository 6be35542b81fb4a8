package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchRun is one run of the bench's binary.
type benchRun struct {
	stdout, report string
	results        map[string]jsonMetric
	code           int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchDir holds the bench built by buildBench, once built.
var benchDir string

// buildBench builds the bench once for the package's tests (TestMain
// removes it).
var buildBench = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "benchbin")
	if err != nil {
		return "", err
	}
	benchDir = dir
	exe := filepath.Join(dir, "bench")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the bench: %w\n%s", err, out)
	}
	return exe, nil
})

// runBench builds the bench and runs it in an empty directory (no
// bin/hivecrew-helper there) with env; interrupt, when set, sends it
// SIGINT after that long.
func runBench(t *testing.T, interrupt time.Duration, env ...string) benchRun {
	t.Helper()
	exe, err := buildBench()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "BENCH_OUT="+filepath.Join(dir, "r.json"), "BENCH_REPORT="+filepath.Join(dir, "r.html"))...)
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if interrupt > 0 {
		time.AfterFunc(interrupt, func() { cmd.Process.Signal(syscall.SIGINT) })
	}
	err = cmd.Wait()
	var r benchRun
	r.stdout = stdout.String()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatalf("no report written: %v\nstdout:\n%s", err, r.stdout)
	}
	r.report = string(report)
	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatalf("no figures written: %v", err)
	}
	if err := json.Unmarshal(raw, &r.results); err != nil {
		t.Fatalf("figures: %v\n%s", err, raw)
	}
	return r
}

// TestAFailedSuiteIsARow: the helper suite cannot start its helper here
// (no bin/); the bench still prints its table and writes both files,
// with the failure as a row that says why, and exits non-zero.
func TestAFailedSuiteIsARow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bench")
	}
	r := runBench(t, 0, "BENCH_ONLY=helper")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	const why = "the suite failed: start "
	if !strings.Contains(r.stdout, "| helper: suite | - | - |") || !strings.Contains(r.stdout, why) || !strings.Contains(r.stdout, "(run make build)") {
		t.Errorf("the table lacks the failed suite's row and reason:\n%s", r.stdout)
	}
	row, ok := r.results["helper: suite"]
	if !ok || row.Pass || !strings.HasPrefix(row.Violation, why) || row.Conditions == nil {
		t.Errorf("figures: %+v", r.results)
	}
	if !strings.Contains(r.report, why) {
		t.Errorf("the report lacks the failure")
	}
	if runtime.GOOS == "linux" && strings.Contains(row.Note, "missed on") {
		t.Errorf("a failed suite got a verdict meant for a missed figure: %q", row.Note)
	}
}

// TestAnInterruptedBenchReports: interrupted during its store suite, the
// bench ends it, and prints and writes what it has, saying so.
func TestAnInterruptedBenchReports(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bench")
	}
	r := runBench(t, 300*time.Millisecond, "BENCH_ONLY=store")
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	const said = "Interrupted during the last suite"
	if !strings.Contains(r.stdout, "| metric |") || !strings.Contains(r.stdout, said) || !strings.Contains(r.report, said) {
		t.Errorf("the interrupted bench did not report it:\n%s", r.stdout)
	}
	if len(r.results) == 0 {
		t.Error("no rows written")
	}
}
