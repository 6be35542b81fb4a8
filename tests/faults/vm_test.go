package faults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// busy is a script whose agent is inside a 30 s guest call after its
// first decision.
func busy() []llmtest.Turn {
	return []llmtest.Turn{llmtest.Tool("wait", map[string]any{"seconds": 30})}
}

// inGuestCall waits until the task's agent has started its wait call in the
// guest, and returns the task (with its VM).
func (h *helper) inGuestCall(id string) wire.Task {
	h.t.Helper()
	h.waitEvent(id, "the agent's wait call", time.Minute, func(e wire.Event) bool {
		return e.Type == "tool_call_start" && strings.HasPrefix(e.Data.Summary, "wait ")
	})
	task, err := h.unix.Task(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	if task.Status != "running" || task.VMID == "" {
		h.t.Fatalf("task in a guest call is %s on VM %q", task.Status, task.VMID)
	}
	h.ids.Note(task.VMID)
	return task
}

// killMidStep SIGKILLs a part of a running task's sandbox in the middle of
// a guest call and checks the promised outcome: the task fails at once
// with the VM's failure as its reason, the sandbox is gone, the helper
// runs the next task, and the trace of the failed one reads back up to the
// call.
func killMidStep(t *testing.T, part func(sandbox) int, what string) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	llm.Script("[[busy]]", busy()...)
	task := h.inGuestCall(h.create("Wait in the guest [[busy]]").ID)
	s := h.sandboxOf(task.VMID)
	pid := part(s)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (%d): %v", what, pid, err)
	}
	start := time.Now()
	done := h.wait(task.ID, "the task's end", 30*time.Second, terminal)
	t.Logf("%s killed: the task ended %s in %s: %s", what, done.Status, time.Since(start).Round(time.Millisecond), summary(done))
	if done.Status != "failed" || !strings.HasPrefix(summary(done), "The VM failed: ") || !strings.Contains(summary(done), "unexpectedly") {
		t.Fatalf("task after the %s was killed: %s %q; want failed with the VM's failure", what, done.Status, summary(done))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the failure took %s to reach the task", took)
	}
	h.noSandboxesOf([]string{task.VMID}, 5*time.Second)
	h.completes(llm, "[[after]]")
	h.stop()
	tr := readTrace(t, sessionOf(t, home, task.ID))
	found := false
	for _, e := range tr.Events {
		found = found || e.Type == "tool_call_start" && e.Tool == "wait"
	}
	if !found {
		t.Fatalf("the trace of the failed task lacks its last call: %+v", tr.Events)
	}
}

// TestGuestAgentKilledMidStep: the guest agent is SIGKILLed while it runs
// the agent's call.
func TestGuestAgentKilledMidStep(t *testing.T) {
	killMidStep(t, func(s sandbox) int { return s.agent }, "guest agent")
}

// TestSandboxKilledMidStep: the sandbox's PID 1 is SIGKILLed (the kernel
// ends every process in it) while the guest agent runs the agent's call.
func TestSandboxKilledMidStep(t *testing.T) {
	killMidStep(t, func(s sandbox) int { return s.pid1 }, "sandbox")
}

// TestHelperKilledMidTask: the helper is SIGKILLed while two agents are
// inside guest calls and a third task waits in the queue. Their sandboxes
// die with it; the restarted helper loses no task: the two in flight are
// held, with their conversations, and each resumed one goes on in a fresh
// VM to completion, told what happened; the queued one runs to
// completion; the VMs are cleaned up, and the database and traces are
// sound.
func TestHelperKilledMidTask(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	llm.Script("[[one]]", busy()...)
	llm.Script("[[two]]", busy()...)
	llm.Script("[[queued]]", append([]llmtest.Turn{llmtest.Tool("mouse_click", map[string]any{"x": 5, "y": 5})}, llmtest.Done("queued one done")...)...)
	one := h.inGuestCall(h.create("First [[one]]").ID)
	two := h.inGuestCall(h.create("Second [[two]]").ID)
	queued := h.create("Third [[queued]]")
	if q, _ := h.unix.Task(context.Background(), queued.ID); q.Status != "queued" {
		t.Fatalf("third task is %s, want queued behind the two", q.Status)
	}
	h.kill()
	// The sandboxes die with the helper (parent-death signal), before any restart.
	h.noSandboxesOf([]string{one.VMID, two.VMID}, 5*time.Second)

	st := openStore(t, home)
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Fatalf("database right after the SIGKILL: %v", err)
	}
	running, err := st.TasksInStatus(context.Background(), store.StatusRunning)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if len(running) != 2 {
		t.Fatalf("%d tasks running at the kill, want 2", len(running))
	}

	h2 := startProcess(t, home, ids)
	got := h2.wait(queued.ID, "the queued task's end", time.Minute, terminal)
	if got.Status != "completed" || summary(got) != "queued one done" {
		t.Errorf("queued task: %s %q", got.Status, summary(got))
	}
	for i, id := range []string{one.ID, two.ID} {
		held := h2.wait(id, "the interrupted task held", 10*time.Second, func(t wire.Task) bool { return t.Status != "running" })
		if held.Status != "paused" || !strings.Contains(held.StatusReason, "helper stopped") {
			t.Fatalf("interrupted task %s: %s %v, want held", id, held.Status, held.StatusReason)
		}
		marker := []string{"[[one]]", "[[two]]"}[i]
		before := len(llm.Requests(marker))
		if _, err := h2.unix.TaskAction(context.Background(), id, wire.TaskAction{Action: wire.ActionResume, Instructions: "Finish now."}); err != nil {
			t.Fatal(err)
		}
		done := h2.wait(id, "the resumed task's end", time.Minute, terminal)
		if done.Status != "completed" || done.VMID == one.VMID || done.VMID == two.VMID {
			t.Errorf("resumed task %s: %s %q in VM %s", id, done.Status, summary(done), done.VMID)
		}
		// It went on from its conversation: its first step is in the
		// request after the restart, with the note and the instructions.
		reqs := llm.Requests(marker)
		if len(reqs) <= before {
			t.Fatalf("task %s made no request after it was resumed", id)
		}
		next := reqs[before]
		for _, want := range []string{"Step 1.", `\"seconds\":30`, "the Hivecrew helper stopped", "New instructions from the user: Finish now.", "Step 2."} {
			if !strings.Contains(next, want) {
				t.Errorf("task %s: the request after the resume lacks %q: %.2000s", id, want, next)
			}
		}
	}
	all, err := h2.unix.ListTasks(context.Background(), client.TaskQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 3 {
		t.Fatalf("%d tasks after the restart, want 3", all.Total)
	}
	// The restart cleaned up what the killed helper's VMs left (mounts,
	// staging and VM folders).
	if left := leftovers(home, []string{one.VMID, two.VMID}); len(left) > 0 {
		t.Fatalf("left by the killed helper's VMs after the restart:\n%s", strings.Join(left, "\n"))
	}
	h2.stop()
	for _, id := range []string{one.ID, two.ID} {
		readTrace(t, sessionOf(t, home, id))
	}
}
