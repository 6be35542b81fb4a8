package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestPlanCommands: a plan under review is shown, refused by the commands
// of a running agent with the plan commands named instead of the API's
// actions, edited from a file (which starts the run) or cancelled.
func TestPlanCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := h.scripted("[[plan]]", llmtest.Text("1. Open the file."), llmtest.Text("1. Open the file.\n2. Save it."), llmtest.Text("Done."), llmtest.Verdict(true, "Followed the plan."))
	id := h.runTask("Plan it [[plan]]", "--plan-first")
	short := id[:8]
	h.waitStatus(id, "planReview")
	// revise: the model rewrites the plan as the words say; it waits for
	// review again.
	if r := h.cli("plan", "revise", short); r.code != 2 || !strings.Contains(r.stderr, "needs a task and what to change") {
		t.Fatalf("revise without words: %s", r)
	}
	if r := h.ok("plan", "revise", short, "Save", "it", "too."); !strings.HasPrefix(r.stdout, id+"  ") {
		t.Fatalf("revise: %s", r)
	}
	daemontest.WaitTask(t, h.c, id, "the revised plan", 15*time.Second, func(got wire.Task) bool {
		return got.Status == "planReview" && got.PlanMarkdown != nil && strings.Contains(*got.PlanMarkdown, "2. Save it.")
	})
	if r := llm.Requests("[[plan]]"); len(r) < 2 || !strings.Contains(r[1], "Save it too.") {
		t.Fatal("the words did not reach the model")
	}

	show := h.ok("plan", "show", short)
	for _, want := range []string{"Status:  needs you: plan to review (waiting for plan approval)", "Plan:    1. Open the file.", "2. Save it.",
		"hivecrew plan approve " + short, "hivecrew plan edit " + short, "hivecrew plan revise " + short, "hivecrew plan cancel " + short} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("plan show lacks %q:\n%s", want, show.stdout)
		}
	}
	if s := h.ok("show", id).stdout; !strings.Contains(s, "1. Open the file.") || !strings.Contains(s, "hivecrew plan approve "+short) {
		t.Errorf("show does not offer the plan commands:\n%s", s)
	}
	if ls := h.ok("ls", "--status", "planReview").stdout; !strings.Contains(ls, short+"  needs you: plan to review") {
		t.Errorf("ls --status planReview:\n%s", ls)
	}
	if st := h.ok("status").stdout; !strings.Contains(st, "Plans:") || !strings.Contains(st, "1 waiting for your review") {
		t.Errorf("status does not count the plan under review:\n%s", st)
	}
	// The commands of a running agent say which command applies, and name
	// no API action (approve_plan) the CLI does not offer.
	for _, cmd := range [][]string{{"approve", id}, {"deny", id}, {"resume", id}, {"pause", id}, {"say", id, "hurry"}, {"answer", id, "yes"}} {
		r := h.cli(cmd...)
		if r.code != 1 || !strings.Contains(r.stderr, "hivecrew plan approve "+short) || strings.Contains(r.stderr, "approve_plan") ||
			strings.Contains(r.stderr, "no pending") {
			t.Errorf("%s under plan review: %s", cmd[0], r)
		}
	}

	empty := filepath.Join(t.TempDir(), "empty.md")
	os.WriteFile(empty, []byte(" \n\n"), 0o600)
	if r := h.cli("plan", "edit", id, "--file", empty); r.code != 1 || !strings.Contains(r.stderr, "is empty: nothing was sent") {
		t.Fatalf("edit with an empty plan: %s", r)
	}
	if r := h.cli("plan", "edit", id, "--file", filepath.Join(t.TempDir(), "missing.md")); r.code != 1 || !strings.Contains(r.stderr, "read the new plan from") {
		t.Fatalf("edit from a missing file: %s", r)
	}
	if got := h.task(id); got.Status != "planReview" {
		t.Fatalf("a refused edit changed the task: %s", got.Status)
	}
	newPlan := filepath.Join(t.TempDir(), "plan.md")
	os.WriteFile(newPlan, []byte("1. Only save it.\n"), 0o600)
	if r := h.ok("plan", "edit", id, "--file", newPlan); !strings.HasPrefix(r.stdout, id+"  ") {
		t.Fatalf("edit: %s", r)
	}
	done := h.waitStatus(id, "completed")
	if done.PlanMarkdown == nil || *done.PlanMarkdown != "1. Only save it." {
		t.Fatalf("plan after the edit: %v", done.PlanMarkdown)
	}
	if s := h.ok("show", short).stdout; !strings.Contains(s, "Checklist:") || !strings.Contains(s, "[ ] 1. Only save it.") {
		t.Errorf("show lacks the checklist the plan became:\n%s", s)
	}
	if r := llm.Requests("[[plan]]"); len(r) < 3 || !strings.Contains(r[2], "1. Only save it.") {
		t.Fatal("the edited plan did not reach the agent")
	}
	if r := h.cli("plan", "approve", id); r.code != 1 || !strings.Contains(r.stderr, "not waiting for plan review") {
		t.Fatalf("approve after the end: %s", r)
	}

	llm.Script("[[cancel]]", llmtest.Text("1. Nothing."))
	id = h.runTask("Plan it [[cancel]]", "--plan-first")
	h.waitStatus(id, "planReview")
	if r := h.ok("plan", "cancel", id); !strings.HasSuffix(r.stdout, "  cancelled\n") {
		t.Fatalf("plan cancel: %s", r)
	}

	llm.Script("[[approve]]", llmtest.Text("1. Say hello."), llmtest.Text("Hello."), llmtest.Verdict(true, "Said hello."))
	id = h.runTask("Plan it [[approve]]", "--plan-first")
	h.waitStatus(id, "planReview")
	h.ok("plan", "approve", id)
	h.waitStatus(id, "completed")

	plain := h.runTask("No plan")
	if r := h.cli("plan", "show", plain); r.code != 1 || !strings.Contains(r.stderr, "not a plan-first task") {
		t.Fatalf("plan show of a task without a plan: %s", r)
	}
	if r := h.cli("plan", "approve"); r.code != 2 {
		t.Fatalf("plan approve without an id: %s", r)
	}
}

// TestRunWaitPlanFailed: a model that answers the plan request with a tool
// call ends the task planFailed; run --wait exits 1 and prints the reason.
func TestRunWaitPlanFailed(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("[[tool]]", llmtest.Tool("mouse_click", map[string]any{"x": 1, "y": 1}))
	r := h.cli("run", "Plan it [[tool]]", "--plan-first", "--wait")
	if r.code != 1 || !strings.Contains(r.stdout, "Status:   planning failed") || !strings.Contains(r.stdout, "tool call (mouse_click) instead of a plan") {
		t.Fatalf("run --wait of a failed plan: %s", r)
	}
}

// TestRunWaitSaysThePlanWaits: run --wait says how to review the plan.
func TestRunWaitSaysThePlanWaits(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("[[wait]]", llmtest.Text("1. Wait."), llmtest.Text("Done."), llmtest.Verdict(true, "Done."))
	done := h.cliAsync("run", "Plan it [[wait]]", "--plan-first", "--wait")
	var id string
	waitFor(t, "the plan", func() bool {
		l, err := h.c.ListTasks(context.Background(), client.TaskQuery{Statuses: []string{"planReview"}, Limit: 1})
		if err != nil || len(l.Tasks) == 0 {
			return false
		}
		id = l.Tasks[0].ID
		return true
	})
	h.ok("plan", "approve", id)
	r := <-done
	if r.code != 0 || !strings.Contains(r.stderr, "waits for your review: hivecrew plan show "+id[:8]) {
		t.Fatalf("run --wait: %s", r)
	}
}

// TestReadPlan: where plan edit takes the new plan from.
func TestReadPlan(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "plan.md")
	os.WriteFile(file, []byte("  1. From the file.\n"), 0o600)
	for name, c := range map[string]struct {
		file, stdin    string
		tty            bool
		visual, editor string
		want, err      string
	}{
		"file":                 {file: file, tty: true, want: "1. From the file."},
		"stdin, not a tty":     {stdin: "1. Piped.\n", want: "1. Piped."},
		"dash is stdin":        {file: "-", stdin: "1. Dash.", tty: true, want: "1. Dash."},
		"editor on the plan":   {tty: true, editor: `sed -i s/Old/New/`, want: "1. New step."},
		"visual first":         {tty: true, visual: `printf '1. Visual.' >`, editor: "false", want: "1. Visual."},
		"no editor":            {tty: true, err: "$EDITOR is not set"},
		"editor fails":         {tty: true, editor: "false", err: "read the new plan from the editor"},
		"editor empties it":    {tty: true, editor: `: >`, err: "empty"},
		"too large from stdin": {stdin: strings.Repeat("x", maxPlanBytes+1), err: "over"},
	} {
		got, err := readPlan(ctx, c.file, strings.NewReader(c.stdin), c.tty, c.visual, c.editor, "1. Old step.")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %q, %v; want an error with %q", name, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.want)
		}
	}
	if _, err := readPlan(ctx, "", strings.NewReader(""), false, "", "", ""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("empty stdin: %v", err)
	}
}
