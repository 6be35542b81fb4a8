package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestUserControlOverAPI: questions (wrong option, stale id, right
// answer), permissions, pause and resume with instructions, instructions
// without pausing, takeover with input at exact guest coordinates, and the
// plan-first flow, all through the API on a running agent.
func TestUserControlOverAPI(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	hold := make(chan struct{})
	h.llm.Script("[[ctl]]",
		llmtest.Tool("ask_multiple_choice", map[string]any{"question": "Which report?", "options": []string{"Q1", "Q2"}}),
		llmtest.Tool("run_shell", map[string]any{"command": "echo approved > outbox/shell.txt"}),
		llmtest.Turn{Msg: llmtest.Tool("wait", map[string]any{"seconds": 0.1}).Msg, Hold: hold},
		llmtest.Tool("wait", map[string]any{"seconds": 0.1}),
		llmtest.Tool("wait", map[string]any{"seconds": 0.1}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Handled both reports."))
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Pick a report [[ctl]]"})
	if err != nil {
		t.Fatal(err)
	}
	id := task.ID
	task = h.waitTask(id, "the question", func(t wire.Task) bool { return t.PendingQuestion != nil })
	q := task.PendingQuestion
	var got wire.Question
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+id+"/question", nil), &got)
	if got.ID != q.ID || got.Question != "Which report?" || len(got.SuggestedAnswers) != 2 {
		t.Fatalf("question = %+v", got)
	}
	h.expect(400, "POST", "/api/v1/tasks/"+id+"/question/answer", map[string]any{"questionId": q.ID, "answer": "Q3"})
	h.expect(409, "POST", "/api/v1/tasks/"+id+"/question/answer", map[string]any{"questionId": "stale", "answer": "Q2"})
	h.expect(204, "POST", "/api/v1/tasks/"+id+"/question/answer", map[string]any{"questionId": q.ID, "answer": "Q2"})

	// run_shell asks by default.
	task = h.waitTask(id, "the permission request", func(t wire.Task) bool { return t.PendingPermission != nil })
	p := task.PendingPermission
	if p.ToolName != "run_shell" || !strings.Contains(p.Details, "echo approved") {
		t.Fatalf("permission = %+v", p)
	}
	h.expect(409, "POST", "/api/v1/tasks/"+id+"/permission/respond", map[string]any{"permissionId": "stale", "approved": true})
	h.expect(204, "POST", "/api/v1/tasks/"+id+"/permission/respond", map[string]any{"permissionId": p.ID, "approved": true})

	// While the model "thinks" (held answer): instructions without pausing,
	// then a takeover.
	h.waitTask(id, "the held LLM request", func(wire.Task) bool { return len(h.llm.Requests("[[ctl]]")) >= 3 })
	h.expect(204, "POST", "/api/v1/tasks/"+id+"/instructions", map[string]any{"text": "Prefer Q2."})
	var tk wire.Task
	json.Unmarshal(h.expect(200, "POST", "/api/v1/tasks/"+id+"/takeover", map[string]any{"action": "start"}), &tk)
	if tk.Status != "paused" || !tk.TakenOver {
		t.Fatalf("after takeover: %s taken=%v", tk.Status, tk.TakenOver)
	}
	h.expect(409, "POST", "/api/v1/tasks/"+id+"/takeover", map[string]any{"action": "start"})
	h.expect(204, "POST", "/api/v1/tasks/"+id+"/input", map[string]any{"type": "click", "x": 321.5, "y": 123})
	h.expect(204, "POST", "/api/v1/tasks/"+id+"/input", map[string]any{"type": "type", "text": "hi"})
	h.expect(400, "POST", "/api/v1/tasks/"+id+"/input", map[string]any{"type": "click", "x": 5000, "y": 1})
	m := h.backend.Machine(tk.VMID)
	if m == nil {
		t.Fatalf("no fake machine %s", tk.VMID)
	}
	var click, typed bool
	for _, a := range m.Driver().Actions() {
		click = click || (a.Kind == "click" && a.X == 321.5 && a.Y == 123)
		typed = typed || (a.Kind == "type" && a.Text == "hi")
	}
	if !click || !typed {
		t.Fatalf("guest actions = %+v", m.Driver().Actions())
	}
	close(hold)
	tk = wire.Task{}
	json.Unmarshal(h.expect(200, "POST", "/api/v1/tasks/"+id+"/takeover", map[string]any{"action": "end", "instructions": "Your turn again."}), &tk)
	if tk.Status != "running" || tk.TakenOver {
		t.Fatalf("after hand back: %s taken=%v", tk.Status, tk.TakenOver)
	}
	h.waitTask(id, "the next LLM request", func(wire.Task) bool { return len(h.llm.Requests("[[ctl]]")) >= 4 })
	if r := h.llm.Requests("[[ctl]]")[3]; !strings.Contains(r, "Prefer Q2.") || !strings.Contains(r, "Your turn again.") {
		t.Fatal("the instructions did not reach the model")
	}
	// Pause and resume.
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+id, map[string]any{"action": "pause"}), &tk)
	if tk.Status != "paused" {
		t.Fatalf("after pause: %s", tk.Status)
	}
	h.expect(409, "PATCH", "/api/v1/tasks/"+id, map[string]any{"action": "pause"})
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+id, map[string]any{"action": "resume", "instructions": "Finish up."}), &tk)
	if tk.Status != "running" {
		t.Fatalf("after resume: %s", tk.Status)
	}
	done := h.waitTask(id, "the end", terminal)
	if done.Status != "completed" || len(done.OutputFiles) != 1 || done.OutputFiles[0].Name != "shell.txt" {
		t.Fatalf("ended %+v", done)
	}
}

// TestPlanFirst: the model's plan waits in planReview; an edit (Swift's
// instructions field) replaces it and runs it; approve runs the plan as
// it is; cancel_plan answers with the task cancelled.
func TestPlanFirst(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	h.llm.Script("[[plan]]", llmtest.Text("1. Open the file.\n2. Save it."), llmtest.Text("Done."), llmtest.Verdict(true, "Followed the plan."))
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Plan it [[plan]]", PlanFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	task = h.waitTask(task.ID, "the plan", func(t wire.Task) bool { return t.PlanMarkdown != nil && t.Status == "planReview" })
	if !strings.Contains(*task.PlanMarkdown, "Open the file") {
		t.Fatalf("plan = %q", *task.PlanMarkdown)
	}
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "resume"})
	h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "edit_plan", "instructions": "1. Only save it."})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "approve_plan"}) // the edit started it
	done := h.waitTask(task.ID, "the end", terminal)
	if done.Status != "completed" || *done.PlanMarkdown != "1. Only save it." {
		t.Fatalf("ended %+v", done)
	}
	if r := h.llm.Requests("[[plan]]"); len(r) < 2 || !strings.Contains(r[1], "1. Only save it.") {
		t.Fatal("the approved plan did not reach the agent")
	}

	h.llm.Script("[[noplan]]", llmtest.Text("1. Nothing."))
	task, _ = h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Plan it [[noplan]]", PlanFirst: true})
	h.waitTask(task.ID, "the plan", func(t wire.Task) bool { return t.PlanMarkdown != nil && t.Status == "planReview" })
	var cancelled wire.Task
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "cancel_plan"}), &cancelled)
	if cancelled.Status != "cancelled" {
		t.Fatalf("cancel_plan answered the task %s, want it cancelled", cancelled.Status)
	}
}

// TestCancelAndStopAll: cancel stops a running agent and a queued task;
// stop-all stops every active and queued task and leaves no VM.
func TestCancelAndStopAll(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"maxConcurrentVMs": 3, "vmMemoryMB": 512, "vmCpuCount": 1}); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	h.llm.Script("[[long]]", llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block, Repeat: true})
	var ids []string
	for range 5 {
		task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Take long [[long]]"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	for _, id := range ids[:3] {
		h.waitTask(id, "running", func(t wire.Task) bool { return t.Status == "running" })
	}
	if st, _ := h.unix.Task(ctx, ids[3]); st.Status != "queued" {
		for _, id := range ids {
			st, _ := h.unix.Task(ctx, id)
			t.Logf("%s %s %s", id, st.Status, st.StatusReason)
		}
		t.Fatalf("4th task is %s with 3 slots", st.Status)
	}
	// Cancel one running and one queued task.
	h.expect(200, "PATCH", "/api/v1/tasks/"+ids[0], map[string]any{"action": "cancel"})
	h.expect(200, "PATCH", "/api/v1/tasks/"+ids[4], map[string]any{"action": "cancel"})
	for _, id := range []string{ids[0], ids[4]} {
		if st, _ := h.unix.Task(ctx, id); st.Status != "cancelled" {
			t.Fatalf("cancelled task is %s", st.Status)
		}
	}
	h.waitTask(ids[3], "the freed slot", func(t wire.Task) bool { return t.Status == "running" })
	start := time.Now()
	res, err := h.unix.StopAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stop-all: %d tasks in %s", len(res.Stopped), time.Since(start))
	if len(res.Stopped) != 3 {
		t.Fatalf("stopped %v, want the 3 running tasks", res.Stopped)
	}
	for _, id := range ids[1:4] {
		if st, _ := h.unix.Task(ctx, id); st.Status != "cancelled" || !strings.Contains(*st.ResultSummary, "kill switch") {
			t.Fatalf("after stop-all: %s %v", st.Status, st.ResultSummary)
		}
	}
	vms, err := h.unix.VMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vms {
		if v.TaskID != "" {
			t.Fatalf("VM %s still serves task %s", v.ID, v.TaskID)
		}
	}
}

// TestLostVMFailsTheTask: a VM that crashes, or that the user stops, ends
// its task as failed with the reason, and the queue goes on.
func TestLostVMFailsTheTask(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	block := make(chan struct{})
	defer close(block)
	h.llm.Script("[[crash]]", llmtest.Turn{Msg: llmtest.Text("...").Msg, Hold: block, Repeat: true})
	ctx := context.Background()
	a, _ := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Crash [[crash]]"})
	b, _ := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Stopped [[crash]]"})
	ta := h.waitTask(a.ID, "running", func(t wire.Task) bool { return t.Status == "running" })
	tb := h.waitTask(b.ID, "running", func(t wire.Task) bool { return t.Status == "running" })
	h.backend.Machine(ta.VMID).Crash()
	if err := h.unix.StopVM(ctx, tb.VMID); err != nil {
		t.Fatal(err)
	}
	ta = h.waitTask(a.ID, "the end", terminal)
	tb = h.waitTask(b.ID, "the end", terminal)
	if ta.Status != "failed" || !strings.Contains(*ta.ResultSummary, "The VM failed") {
		t.Fatalf("crashed VM's task: %s %s", ta.Status, *ta.ResultSummary)
	}
	if tb.Status != "failed" || !strings.Contains(*tb.ResultSummary, "stopped by the user") {
		t.Fatalf("stopped VM's task: %s %s", tb.Status, *tb.ResultSummary)
	}
	c, _ := h.unix.CreateTask(ctx, wire.CreateTask{Description: "After the crash"})
	if tc := h.waitTask(c.ID, "the end", terminal); tc.Status != "completed" {
		t.Fatalf("next task: %s", tc.Status)
	}
}
