package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestRm: rm refuses a running task and says how to delete it, rm --force
// cancels and deletes it, and rm of an ended task deletes it by a prefix
// of its id; a deleted task is gone for show and for rm.
func TestRm(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	defer close(hold)
	llm := h.scripted("Wait forever.", llmtest.Turn{Msg: llmtest.Text("never answered").Msg, Hold: hold})
	llm.Script("Be quick.", llmtest.Done("Quick.")...)
	id := h.runTask("Wait forever.")
	h.waitStatus(id, "running")
	r := h.cli("rm", id)
	if r.code != 1 || !strings.Contains(r.stderr, "is running: cancel it first") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("rm of a running task: %s", r)
	}
	if h.task(id).Status != "running" {
		t.Fatal("a refused rm stopped the task")
	}
	if r := h.ok("rm", "--force", id); !strings.Contains(r.stdout, "Deleted task "+id[:8]) {
		t.Fatalf("rm --force: %s", r)
	}
	if _, err := h.c.Task(context.Background(), id); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("task after rm --force: %v", err)
	}

	quick := h.runTask("Be quick.")
	h.waitStatus(quick, "completed")
	h.ok("rm", quick[:8])
	if r := h.cli("show", quick); r.code != 1 {
		t.Fatalf("show after rm: %s", r)
	}
	if r := h.cli("rm", quick); r.code != 1 || !strings.HasPrefix(r.stderr, "hivecrew: ") {
		t.Fatalf("rm twice: %s", r)
	}
	if r := h.cli("rm"); r.code != 2 {
		t.Fatalf("rm without an id: %s", r)
	}
}

// TestSettingsCommand: settings show prints a setting, settings set changes
// it, and a value out of range is refused with the setting's bounds and
// changes nothing.
func TestSettingsCommand(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	if r := h.ok("settings", "show", "completionCheckTries", "maxUploadMB"); !strings.Contains(r.stdout, "completionCheckTries  2") || !strings.Contains(r.stdout, "maxUploadMB           512") {
		t.Fatalf("show: %s", r)
	}
	if r := h.ok("settings", "set", "completionCheckTries=5", "maxUploadMB=64"); !strings.Contains(r.stdout, "completionCheckTries = 5") || !strings.Contains(r.stdout, "maxUploadMB = 64") {
		t.Fatalf("set: %s", r)
	}
	for _, kv := range []string{"completionCheckTries=11", "maxUploadMB=0", "maxUploadMB=many"} {
		if r := h.cli("settings", "set", kv); r.code != 1 || !strings.Contains(r.stderr, strings.Split(kv, "=")[0]) {
			t.Fatalf("set %s: %s", kv, r)
		}
	}
	if r := h.cli("settings", "set", "completionCheckTries=11"); !strings.Contains(r.stderr, "between 1 and 10") {
		t.Fatalf("no bounds in %s", r)
	}
	s, err := h.c.Settings(context.Background())
	if err != nil || s.CompletionCheckTries != 5 || s.MaxUploadMB != 64 {
		t.Fatalf("settings after refusals: %d %d %v", s.CompletionCheckTries, s.MaxUploadMB, err)
	}
	if r := h.cli("settings", "show", "nope"); r.code != 2 || !strings.Contains(r.stderr, `no setting "nope"`) {
		t.Fatalf("show nope: %s", r)
	}
}
