package faults

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// Follow-ups (issue 20) in real sandboxes: task A writes an output file;
// task B continues A, and its agent finds the file in its inbox (cat in the
// VM) and A's request and result in its first request. A task that has not
// finished cannot be continued. Rerunning B on another model sends that
// model's name, and the rerun still has A's file.
func TestContinuationGetsTheEarlierOutputs(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()

	gate := make(chan struct{})
	llm.Script("[[first]]",
		llmtest.Turn{Msg: llmtest.Tool("run_shell", map[string]any{"command": "printf 'total: 42\\n' > /mnt/shared/outbox/totals.txt"}).Msg, Hold: gate},
		llmtest.Text("Written."), llmtest.Verdict(true, "Put the total in totals.txt."))
	a, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Add up the invoices [[first]]", ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	// A runs: it cannot be continued yet.
	h.wait(a.ID, "A running", 2*time.Minute, func(t wire.Task) bool { return t.Status == "running" })
	if _, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Too early", SwiftTaskFields: wire.SwiftTaskFields{ContinuationSourceTaskID: a.ID}}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("continuing a running task: %v", err)
	}
	close(gate)
	a = h.wait(a.ID, "A's end", 2*time.Minute, terminal)
	h.ids.Note(a.VMID)
	if a.Status != "completed" || len(a.OutputFiles) != 1 {
		t.Fatalf("A ended %s with %d outputs: %q", a.Status, len(a.OutputFiles), summary(a))
	}

	cat := llmtest.Tool("run_shell", map[string]any{"command": "cat /mnt/shared/inbox/totals.txt"})
	llm.Script("[[second]]", cat, llmtest.Text("It says 42."), llmtest.Verdict(true, "The total is 42."))
	b, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Check the total [[second]]", ToolPolicy: map[string]string{"run_shell": "allow"},
		SwiftTaskFields: wire.SwiftTaskFields{ContinuationSourceTaskID: a.ID}})
	if err != nil {
		t.Fatal(err)
	}
	b = h.wait(b.ID, "B's end", 2*time.Minute, terminal)
	h.ids.Note(b.VMID)
	if b.Status != "completed" || b.ContinuationSourceTaskID != a.ID {
		t.Fatalf("B ended %s (continues %q): %q", b.Status, b.ContinuationSourceTaskID, summary(b))
	}
	reqs := llm.Requests("[[second]]")
	if len(reqs) < 2 {
		t.Fatalf("B made %d requests", len(reqs))
	}
	for _, want := range []string{"Add up the invoices", "Put the total in totals.txt.", "printf 'total: 42", "among your input files: totals.txt"} {
		if !strings.Contains(reqs[0], want) {
			t.Errorf("B's first request lacks %q", want)
		}
	}
	if !strings.Contains(reqs[1], `total: 42`) {
		t.Errorf("B's agent did not find A's output in its inbox: %.2000s", reqs[1])
	}
	if n := len(llm.Requests("[[first]]")); n != 3 {
		t.Errorf("A's script answered %d requests, want its 3 (B's took none)", n)
	}

	// Rerun B on another model: its requests name that model, and it
	// still has A's file.
	llm.Script("[[second]]", cat, llmtest.Text("Still 42."), llmtest.Verdict(true, "Still 42."))
	r, err := h.unix.TaskAction(ctx, b.ID, wire.TaskAction{Action: wire.ActionRerun, ModelID: "scripted-two"})
	if err != nil {
		t.Fatal(err)
	}
	r = h.wait(r.ID, "the rerun's end", 2*time.Minute, terminal)
	h.ids.Note(r.VMID)
	reqs = llm.Requests("[[second]]")
	if r.Status != "completed" || r.ModelID != "scripted-two" || len(reqs) < 2 {
		t.Fatalf("rerun ended %s on %s (%d requests): %q", r.Status, r.ModelID, len(reqs), summary(r))
	}
	for i, body := range reqs {
		if !strings.Contains(body, `"model":"scripted-two"`) {
			t.Errorf("the rerun's request %d went to another model: %.200s", i, body)
		}
	}
	if !strings.Contains(reqs[1], "total: 42") {
		t.Errorf("the rerun did not find A's output")
	}
}
