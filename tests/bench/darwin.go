package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
)

// benchDarwin measures macOS guests (the vz backend) on a Mac: a task
// served by a warm VM that the pool saved to disk and restores (issue
// 16.7), against a cold boot of the same template. It drives the helper
// of bin/ (make build signs it with the virtualization entitlement) on
// the data folder $HIVECREW_BENCH_HOME, which must hold a ready macOS
// template (its default is used; stop that folder's own helper first);
// the bench's tasks are deleted afterwards. Off a Mac, or without that
// folder, its rows say why they were skipped.
func benchDarwin(ctx context.Context, _ *slog.Logger) (_ []Metric, err error) {
	const coldName, warmName = "macOS: cold boot (POST /tasks -> first screenshot)", "macOS: warm restore from disk (POST /tasks -> first screenshot)"
	skip := func(why string) []Metric {
		return []Metric{{Name: coldName, Skipped: why}, {Name: warmName, Skipped: why}}
	}
	if runtime.GOOS != "darwin" || runtime.GOARCH != "arm64" {
		return skip(fmt.Sprintf("needs a Mac with Apple silicon; this is %s/%s (scripts/mac-smoke checks the restore too)", runtime.GOOS, runtime.GOARCH)), nil
	}
	home := os.Getenv("HIVECREW_BENCH_HOME")
	if home == "" {
		return skip("set HIVECREW_BENCH_HOME to a Hivecrew data folder with a ready macOS template"), nil
	}
	if _, err := os.Stat(filepath.Join(home, "hivecrew.db")); err != nil {
		return nil, fmt.Errorf("HIVECREW_BENCH_HOME=%s is not a Hivecrew data folder: %w", home, err)
	}
	p := newProvider()
	defer p.close()
	h, err := startHelperAt(home)
	if err != nil {
		return nil, fmt.Errorf("%w (is a helper already running on %s? stop it first)", err, home)
	}
	defer func() { err = errors.Join(err, h.close()) }()
	defer h.removeBenchData(context.Background())
	if err := h.configure(ctx, p, map[string]any{"warmPoolSize": 0}); err != nil {
		return nil, err
	}
	run := dispatchRun{n: 3, warmup: 1, within: 5 * time.Minute}
	cold, err := dispatch(ctx, h, p, "maccold", run)
	if err != nil {
		return nil, err
	}
	cold.Name, cold.Target = coldName, 90*time.Second
	cold.Note = "no warm VM: a clone of the template boots until its guest agent answers"
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"warmPoolSize": 1}); err != nil {
		return nil, err
	}
	run.waitFor, run.within = "suspended", 10*time.Minute
	warm, err := dispatch(ctx, h, p, "macwarm", run)
	if err != nil {
		return nil, err
	}
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"warmPoolSize": 0}); err != nil {
		return nil, err
	}
	warm.Name, warm.Target = warmName, 10*time.Second
	warm.Baseline, warm.BaselineName, warm.MinSpeedup = cold.P50, "cold boot", 2
	warm.Note = "the warm VM was saved to disk after it booted (no host VM slot, no memory) and is restored for the task"
	return []Metric{cold, warm}, nil
}

// removeBenchData deletes, from a data folder of the user's, the tasks
// and the provider the bench added.
func (h *helperProc) removeBenchData(ctx context.Context) {
	for _, marker := range []string{"[[maccold", "[[macwarm"} {
		list, err := h.unix.ListTasks(ctx, client.TaskQuery{Search: marker, Limit: 200})
		if err != nil {
			continue
		}
		for _, t := range list.Items() {
			if strings.Contains(t.Description, marker) {
				h.unix.DeleteTask(ctx, t.ID, true)
			}
		}
	}
	ps, _ := h.unix.Providers(ctx)
	for _, p := range ps {
		if p.DisplayName == benchProvider {
			h.unix.RemoveProvider(ctx, p.ID)
		}
	}
}
