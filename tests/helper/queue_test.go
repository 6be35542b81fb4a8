package helper

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestQueueSurvivesSIGKILL: 100 tasks queued with 2 slots; the helper is
// SIGKILLed halfway and started again. None is lost: the ones that were in
// flight are held (or queued again, one that had no VM yet) and, resumed,
// complete; every other one completes, the database passes its integrity
// check, and no sandbox is left.
func TestQueueSurvivesSIGKILL(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	p.Settings(t, map[string]any{"maxConcurrentVMs": 2, "warmPoolSize": 0, "vmMemoryMB": 1024})
	p.DropWarmVMs(t)
	ctx := context.Background()
	// Each task takes a few steps, so that the kill lands mid-task.
	slow := llmtest.Turn{Msg: llmtest.Tool("wait", map[string]any{"seconds": 0.05}).Msg, Delay: 20 * time.Millisecond}
	var ids []string
	for i := range 100 {
		marker := fmt.Sprintf("[[q%03d]]", i)
		llm.Script(marker, append([]llmtest.Turn{slow, slow}, llmtest.Done("done "+marker)...)...)
		task, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Queued job " + marker})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	// Halfway: 50 tasks have ended.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		l, err := p.Unix.ListTasks(ctx, client.TaskQuery{Statuses: []string{"completed"}, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if l.Total >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d tasks completed in 5 minutes", l.Total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Kill()
	st := helperproc.CheckStore(t, home)
	inflight, err := st.TasksInStatus(ctx, store.StatusWaitingForVM, store.StatusRunning, store.StatusPaused)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if len(inflight) == 0 || len(inflight) > 2 {
		t.Fatalf("%d tasks in flight at the kill, want 1 or 2", len(inflight))
	}
	t.Logf("killed with %d tasks in flight", len(inflight))

	p2 := startHelper(t, home)
	for _, task := range inflight {
		got := p2.WaitTask(t, task.ID, "the interrupted task held or queued", time.Minute, func(t wire.Task) bool { return t.Status != "running" && t.Status != "waiting_for_vm" })
		if got.Status == "paused" {
			if !strings.Contains(got.StatusReason, "helper stopped") {
				t.Fatalf("interrupted task %s paused: %q", task.ID, got.StatusReason)
			}
			if _, err := p2.Unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionResume}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range ids {
		p2.WaitTask(t, id, "the end of "+id, 5*time.Minute, terminal)
	}
	all, err := p2.Unix.ListTasks(ctx, client.TaskQuery{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 100 {
		t.Fatalf("%d tasks after the restart, want 100", all.Total)
	}
	for _, task := range all.Tasks {
		if task.Status != "completed" {
			t.Errorf("task %s: %s (%v)", task.ID, task.Status, *task.ResultSummary)
		}
	}
	if err := p2.Term(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	helperproc.CheckStore(t, home)
	if procs := p2.Sandboxes(); len(procs) > 0 {
		t.Fatalf("sandboxes left behind:\n%s", procs)
	}
	if dirs := helperproc.VMDirs(home); len(dirs) > 0 {
		t.Fatalf("VM folders left behind: %v", dirs)
	}
	if m := p2.Mounts(); len(m) > 0 {
		t.Fatalf("mounts left behind:\n%s", strings.Join(m, "\n"))
	}
}

// TestStopAllWithEightAgents: the kill switch cancels 8 running agents
// and removes all their sandboxes.
func TestStopAllWithEightAgents(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	p.Settings(t, map[string]any{"maxConcurrentVMs": 8, "warmPoolSize": 0, "vmMemoryMB": 512, "vmCpuCount": 1})
	p.DropWarmVMs(t)
	block := make(chan struct{})
	defer close(block)
	// Each agent works: a 30 s guest call, then an LLM answer that never comes.
	llm.Script("[[busy]]", llmtest.Tool("wait", map[string]any{"seconds": 30}), llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block, Repeat: true})
	ctx := context.Background()
	var ids []string
	for range 8 {
		task, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Stay busy [[busy]]"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		p.WaitTask(t, id, "running", time.Minute, func(t wire.Task) bool { return t.Status == "running" })
	}
	if n := helperproc.CountVMs(p.Sandboxes()); n != 8 {
		t.Fatalf("%d sandboxes for 8 running agents", n)
	}
	start := time.Now()
	res, err := p.Unix.StopAll(ctx)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stop-all: %d agents stopped in %s (helper measured %.0f ms)", len(res.Stopped), took, res.DurationMs)
	if len(res.Stopped) != 8 {
		t.Fatalf("stopped %d tasks, want 8", len(res.Stopped))
	}
	for _, id := range ids {
		task, err := p.Unix.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != "cancelled" {
			t.Errorf("task %s is %s after stop-all", id, task.Status)
		}
	}
	if procs := p.Sandboxes(); len(procs) > 0 {
		t.Fatalf("sandboxes left after stop-all:\n%s", procs)
	}
	if dirs := helperproc.VMDirs(home); len(dirs) > 0 {
		t.Fatalf("VM folders left after stop-all: %v", dirs)
	}
	if m := p.Mounts(); len(m) > 0 {
		t.Fatalf("mounts left after stop-all:\n%s", strings.Join(m, "\n"))
	}
}

// TestSIGTERMDrains: SIGTERM stops a running agent, holds its task for a
// resume (what its VM had saved in outbox/ kept), removes its sandbox, and
// the helper exits cleanly; started again, the task resumed goes on to
// completion with the file it had saved.
func TestSIGTERMDrains(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	block := make(chan struct{})
	defer close(block)
	llm.Script("[[term]]", llmtest.Tool("write_file", map[string]any{"path": "outbox/kept.txt", "contents": "saved before the stop"}),
		llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block}, llmtest.Text("Done."), llmtest.Verdict(true, "Went on after the stop."))
	task, err := p.Unix.CreateTask(context.Background(), wire.CreateTask{Description: "Run until stopped [[term]]"})
	if err != nil {
		t.Fatal(err)
	}
	p.WaitTask(t, task.ID, "running", time.Minute, func(t wire.Task) bool { return t.Status == "running" })
	for deadline := time.Now().Add(time.Minute); len(llm.Requests("[[term]]")) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task never asked for its second answer")
		}
	}
	if err := p.Term(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if procs := p.Sandboxes(); len(procs) > 0 {
		t.Fatalf("sandboxes left after SIGTERM:\n%s", procs)
	}
	st := helperproc.CheckStore(t, home)
	got, err := st.GetTask(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusPaused || !strings.Contains(got.StatusReason, "helper stopped") {
		t.Fatalf("task after SIGTERM: %s %q", got.Status, got.StatusReason)
	}
	if vms, _ := st.ListVMs(context.Background()); len(vms) > 0 {
		t.Fatalf("VM records left after SIGTERM: %+v", vms)
	}
	st.Close()

	p2 := startHelper(t, home)
	if _, err := p2.Unix.TaskAction(context.Background(), task.ID, wire.TaskAction{Action: wire.ActionResume}); err != nil {
		t.Fatal(err)
	}
	done := p2.WaitTask(t, task.ID, "the resumed task's end", time.Minute, terminal)
	if done.Status != "completed" || done.ResultSummary == nil || *done.ResultSummary != "Went on after the stop." {
		t.Fatalf("resumed task: %s %v", done.Status, done.ResultSummary)
	}
	kept := false
	for _, f := range done.OutputFiles {
		kept = kept || f.Name == "kept.txt"
	}
	if !kept {
		t.Fatalf("the file saved before the stop is not among the outputs: %+v", done.OutputFiles)
	}
}

// TestQueuedTaskSaysPausedTasksHoldTheVMs: with one VM slot held by a
// paused task, a queued task says why it waits, naming the paused task's
// share, and starts once that task is cancelled.
func TestQueuedTaskSaysPausedTasksHoldTheVMs(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	p.Settings(t, map[string]any{"maxConcurrentVMs": 1, "warmPoolSize": 0, "vmMemoryMB": 1024})
	p.DropWarmVMs(t)
	ctx := context.Background()
	slow := llmtest.Tool("wait", map[string]any{"seconds": 0.05})
	slow.Repeat = true
	llm.Script("[[holder]]", slow)
	holder, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Hold the VM [[holder]]"})
	if err != nil {
		t.Fatal(err)
	}
	p.WaitTask(t, holder.ID, "the holder running", time.Minute, func(t wire.Task) bool { return t.Status == "running" })
	if _, err := p.Unix.TaskAction(ctx, holder.ID, wire.TaskAction{Action: wire.ActionPause}); err != nil {
		t.Fatal(err)
	}
	p.WaitTask(t, holder.ID, "the holder paused", time.Minute, func(t wire.Task) bool { return t.Status == "paused" })
	llm.Script("[[queued]]", llmtest.Done("done")...)
	queued, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Wait my turn [[queued]]"})
	if err != nil {
		t.Fatal(err)
	}
	w := p.WaitTask(t, queued.ID, "a waiting reason", time.Minute, func(t wire.Task) bool {
		return (t.Status == "queued" || t.Status == "waitingForVM") && t.StatusReason != ""
	})
	if !strings.Contains(w.StatusReason, "1 held by paused tasks") {
		t.Fatalf("the queued task waits with %q; want it to name the paused task holding the VM", w.StatusReason)
	}
	if _, err := p.Unix.TaskAction(ctx, holder.ID, wire.TaskAction{Action: wire.ActionCancel}); err != nil {
		t.Fatal(err)
	}
	p.WaitTask(t, queued.ID, "the queued task's end", 2*time.Minute, terminal)
}

// TestBudgetPausesTheTaskUntilRaised: a task created with a token budget
// its first step uses up pauses with the reason; resuming with a raised
// budget (PATCH resume budgetTokens) finishes it, and the task keeps the
// new budget.
func TestBudgetPausesTheTaskUntilRaised(t *testing.T) {
	home := newHome(t)
	p := startHelper(t, home)
	llm := llmtest.New(t)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	p.Settings(t, map[string]any{"warmPoolSize": 0})
	ctx := context.Background()
	llm.Script("[[budget]]", append([]llmtest.Turn{llmtest.Tool("wait", map[string]any{"seconds": 0})}, llmtest.Done("done")...)...)
	small := int64(100)
	task, err := p.Unix.CreateTask(ctx, wire.CreateTask{Description: "Spend tokens [[budget]]", BudgetTokens: &small})
	if err != nil {
		t.Fatal(err)
	}
	got := p.WaitTask(t, task.ID, "the budget pause", time.Minute, func(t wire.Task) bool { return t.Status == "paused" })
	if !strings.Contains(got.StatusReason, "token budget reached") || got.BudgetTokens == nil || *got.BudgetTokens != 100 {
		t.Fatalf("paused with %q, budget %v", got.StatusReason, got.BudgetTokens)
	}
	more := int64(10_000_000)
	if _, err := p.Unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionResume, BudgetTokens: &more}); err != nil {
		t.Fatal(err)
	}
	done := p.WaitTask(t, task.ID, "the end", time.Minute, terminal)
	if done.Status != "completed" || done.BudgetTokens == nil || *done.BudgetTokens != more {
		t.Fatalf("ended %s (%s) with budget %v", done.Status, done.StatusReason, done.BudgetTokens)
	}
}
