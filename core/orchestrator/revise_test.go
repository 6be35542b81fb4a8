package orchestrator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestPlanStreams: while the model writes a plan, the plan so far is the
// task's live answer (what the event stream's ?live=1 sends); it ends
// when the plan waits for review.
func TestPlanStreams(t *testing.T) {
	e := startEnv(t)
	const plan = "1. Open the inbox and list the files.\n2. Read each file.\n3. Save a summary to outbox/summary.md."
	slow := llmtest.Text(plan)
	slow.Pace = 60 * time.Millisecond
	e.llm.Script("[[stream]]", slow)
	task := e.submit("Plan it [[stream]]", true)
	var partial string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plan never showed while it was written")
		}
		cur, ok := e.o.LiveAnswer(task.ID)
		got, _ := e.st.GetTask(context.Background(), task.ID)
		if ok && got.Status == store.StatusPlanning && cur.Text != "" && cur.Text != plan {
			partial = cur.Text
			break
		}
	}
	if !strings.HasPrefix(plan, partial) {
		t.Fatalf("the live plan %q is not the start of the plan", partial)
	}
	review := e.waitStatus(task.ID, store.StatusPlanReview)
	if review.PlanMarkdown != plan {
		t.Fatalf("plan %q", review.PlanMarkdown)
	}
	if cur, ok := e.o.LiveAnswer(task.ID); ok && cur.Text != "" {
		t.Fatalf("a plan under review still streams %q", cur.Text)
	}
}

// TestPlanRevise: revise_plan asks the model to rewrite the plan under
// review from the user's words (it is sent the plan and the words) and
// the new plan is under review again; blank words and a task not under
// review are refused; a rewrite that fails leaves the plan as it was,
// under review, saying why; the revised plan is the one the agent follows.
func TestPlanRevise(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	hold := make(chan struct{})
	rewriting := llmtest.Text("1. Open the file.\n2. Save it as a PDF.")
	rewriting.Hold = hold
	e.llm.Script("[[revise]]",
		llmtest.Text("1. Open the file.\n2. Save it."),
		rewriting,
		llmtest.Status(400),
		llmtest.Text("Done."), llmtest.Verdict(true, "Saved the PDF."))
	task := e.submit("Plan it [[revise]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionRevisePlan, " \n"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("blank revision: %v", err)
	}
	if err := e.o.Plan(ctx, task.ID, wire.ActionRevisePlan, "Save it as a PDF, not as text."); err != nil {
		t.Fatal(err)
	}
	planning := e.waitStatus(task.ID, store.StatusPlanning)
	if planning.PlanRevision != "Save it as a PDF, not as text." || planning.PlanMarkdown != "1. Open the file.\n2. Save it." {
		t.Fatalf("while rewriting: revision %q, plan %q", planning.PlanRevision, planning.PlanMarkdown)
	}
	conflict(t, "revise while rewriting", e.o.Plan(ctx, task.ID, wire.ActionRevisePlan, "More."))
	conflict(t, "approve while rewriting", e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""))
	close(hold)
	review := e.wait(task.ID, "the rewritten plan", func(t store.Task) bool {
		return t.Status == store.StatusPlanReview && strings.Contains(t.PlanMarkdown, "PDF")
	})
	if review.PlanRevision != "" || review.StatusReason != reasonPlanReview {
		t.Fatalf("after the rewrite: revision %q, reason %q", review.PlanRevision, review.StatusReason)
	}
	reqs := e.llm.Requests("[[revise]]")
	if len(reqs) < 2 || !strings.Contains(reqs[1], "1. Open the file.\\n2. Save it.") || !strings.Contains(reqs[1], "Save it as a PDF, not as text.") ||
		!strings.Contains(reqs[1], `"role":"assistant"`) {
		t.Fatalf("the rewrite request did not carry the plan and the words: %s", reqs[len(reqs)-1])
	}
	var asked *store.Event
	for _, ev := range e.events(task.ID) {
		if ev.ActivityType == "user_answer" {
			asked = &ev
		}
	}
	if asked == nil || asked.Status != "queued" || asked.Details != "Save it as a PDF, not as text." {
		t.Fatalf("the request's event: %+v", asked)
	}

	// A rewrite that fails: the plan stays, under review, and says why.
	if err := e.o.Plan(ctx, task.ID, wire.ActionRevisePlan, "Shorter."); err != nil {
		t.Fatal(err)
	}
	kept := e.wait(task.ID, "the failed rewrite", func(t store.Task) bool {
		return t.Status == store.StatusPlanReview && strings.HasPrefix(t.StatusReason, "the plan could not be rewritten")
	})
	if kept.PlanMarkdown != review.PlanMarkdown || kept.PlanRevision != "" || !strings.Contains(kept.StatusReason, "Could not make a plan") {
		t.Fatalf("after a failed rewrite: plan %q, revision %q, reason %q", kept.PlanMarkdown, kept.PlanRevision, kept.StatusReason)
	}
	if err := e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""); err != nil {
		t.Fatal(err)
	}
	done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted {
		t.Fatalf("ended %s", done.Status)
	}
	if r := e.llm.Requests("[[revise]]"); !strings.Contains(r[3], "Follow this plan") || !strings.Contains(r[3], "Save it as a PDF.") {
		t.Fatal("the agent was not given the rewritten plan")
	}
	want := "queued planning planReview queued planning planReview queued planning planReview queued waitingForVM running completed"
	if got := strings.Join(e.statuses(task.ID), " "); got != want {
		t.Fatalf("status changes %q; want %q", got, want)
	}
	if n := e.pool.askedFor(task.ID); n != 1 {
		t.Fatalf("the task asked for %d VMs; want 1, after the approval", n)
	}
}

// TestPlanChecklist: an approved plan's items are the task's checklist
// when its agent starts; the agent ticks them off with the todo tool and
// the task keeps each change.
func TestPlanChecklist(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	hold := make(chan struct{})
	first := llmtest.Tool("todo", map[string]any{"action": "complete", "item": 1})
	first.Hold = hold
	e.llm.Script("[[check]]",
		llmtest.Text("Here is the plan:\n\n1. **Open** the file.\n   Look for the totals.\n2. Save it as `report.pdf`.\n\nThat is all."),
		first,
		llmtest.Tool("todo", map[string]any{"action": "complete", "item": 2}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Saved."))
	task := e.submit("Plan it [[check]]", true)
	e.waitStatus(task.ID, store.StatusPlanReview)
	if err := e.o.Plan(ctx, task.ID, wire.ActionApprovePlan, ""); err != nil {
		t.Fatal(err)
	}
	running := e.waitStatus(task.ID, store.StatusRunning)
	want := []store.TodoItem{{Text: "Open the file."}, {Text: "Save it as report.pdf."}}
	if !slices.Equal(running.Todo, want) {
		t.Fatalf("checklist when the agent starts: %+v", running.Todo)
	}
	close(hold)
	e.wait(task.ID, "item 1 ticked off", func(t store.Task) bool { return len(t.Todo) == 2 && t.Todo[0].Done })
	done := e.wait(task.ID, "the end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted || len(done.Todo) != 2 || !done.Todo[0].Done || !done.Todo[1].Done {
		t.Fatalf("ended %s with checklist %+v", done.Status, done.Todo)
	}
}

func TestPlanItems(t *testing.T) {
	for plan, want := range map[string][]string{
		"1. Open it.\n2) Save it.\n   1. a sub-step\n10. Tidy up.": {"Open it.", "Save it.", "Tidy up."},
		"Steps:\n- Open it\n  - sub\n* Save **it**\n":              {"Open it", "Save it"},
		"1. First\n- a bullet beside numbers":                      {"First"},
		"No list at all.":                                          nil,
		"1.    \n2. Real":                                          {"Real"},
	} {
		var got []string
		for _, it := range planItems(plan) {
			got = append(got, it.Text)
		}
		if !slices.Equal(got, want) {
			t.Errorf("planItems(%q) = %q, want %q", plan, got, want)
		}
	}
	long := planItems("1. " + strings.Repeat("x", 500))
	if len(long) != 1 || len([]rune(long[0].Text)) != maxPlanItemText {
		t.Errorf("a long item: %d runes", len([]rune(long[0].Text)))
	}
	if n := len(planItems(strings.Repeat("- item\n", 80))); n != maxPlanItems {
		t.Errorf("%d items from 80, want %d", n, maxPlanItems)
	}
}
