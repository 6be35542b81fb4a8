package faults

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// Holds (issue 17.8), with a real helper and real sandboxes. Threat and
// promise: a guest agent that stops answering (hung, or made to hang by
// what runs in the VM) does not fail the user's task, nor hold a VM slot
// forever: the task is held for the user; resumed, it goes on in the same
// VM if the guest is back, in a fresh one if not. A task held by the
// system (here an LLM that keeps failing) gives its VM back after
// releasePausedVMMinutes, keeping its outbox, and resumes in a fresh VM.

const paused = "paused"

func isPaused(t wire.Task) bool { return t.Status == paused }

// resume sends PATCH resume, with more steps when given.
func resume(t *testing.T, h *helper, id string, extraSteps int) {
	t.Helper()
	a := wire.TaskAction{Action: wire.ActionResume}
	if extraSteps > 0 {
		a.ExtraSteps = &extraSteps
	}
	if _, err := h.unix.TaskAction(context.Background(), id, a); err != nil {
		t.Fatalf("resume: %v", err)
	}
}

// TestHungGuestHoldsTheTaskUntilItAnswers: the guest agent is stopped
// (SIGSTOP) in the middle of a call. The task is held, saying why, its VM
// kept; when the agent runs again (SIGCONT) the task goes on by itself in
// the same VM and completes.
func TestHungGuestHoldsTheTaskUntilItAnswers(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	llm.Script("[[hung]]", append([]llmtest.Turn{llmtest.Tool("wait", map[string]any{"seconds": 20})}, llmtest.Done("finished after the guest came back")...)...)
	task := h.inGuestCall(h.create("Wait in the guest [[hung]]").ID)
	s := h.sandboxOf(task.VMID)
	if err := syscall.Kill(s.agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	held := h.wait(task.ID, "the hold", 45*time.Second, isPaused)
	t.Logf("held %s after SIGSTOP: %s", time.Since(start).Round(time.Millisecond), held.StatusReason)
	if !strings.Contains(held.StatusReason, "lost touch with the VM's guest agent") || held.VMID != task.VMID {
		t.Fatalf("held %+v; want the guest named, on VM %s", held, task.VMID)
	}
	if len(helperproc.Sandboxes(home, []string{task.VMID})) == 0 {
		t.Fatal("the VM of the held task is gone")
	}
	if err := syscall.Kill(s.agent, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 60*time.Second, terminal)
	if done.Status != "completed" || summary(done) != "finished after the guest came back" || done.VMID != task.VMID {
		t.Fatalf("after SIGCONT: %s %q on %s", done.Status, summary(done), done.VMID)
	}
	h.waitEvent(task.ID, "the note that the guest answers again", time.Second, func(e wire.Event) bool {
		return strings.Contains(e.Data.Summary, "The guest agent answers again")
	})
	h.stop()
	checkNothingLeft(t, home, ids)
}

// resumeHungInFreshVM stops the guest agent of task id's VM once the agent
// calls wait, waits for the hold, resumes the task and waits for its fresh
// VM; it returns the old VM and the fresh one.
func (h *helper) resumeHungInFreshVM(id string) (old, fresh string) {
	t := h.t
	t.Helper()
	h.waitEvent(id, "the agent's wait call", time.Minute, func(e wire.Event) bool {
		return e.Type == "tool_call_start" && strings.HasPrefix(e.Data.Summary, "wait ")
	})
	task, _ := h.unix.Task(context.Background(), id)
	h.ids.Note(task.VMID)
	s := h.sandboxOf(task.VMID)
	if err := syscall.Kill(s.agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	h.wait(id, "the hold", 45*time.Second, isPaused)
	resume(t, h, id, 0)
	running := h.wait(id, "a fresh VM", time.Minute, func(t wire.Task) bool { return t.VMID != "" && t.VMID != task.VMID })
	h.ids.Note(running.VMID)
	return task.VMID, running.VMID
}

// TestHungGuestIsReplacedOnResume: the guest agent stays stopped; the user
// resumes the held task: its VM is stopped and released (the stopped
// process goes with it), a fresh VM gets the outbox the old one had, the
// model is told, and the task completes there.
func TestHungGuestIsReplacedOnResume(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	llm.Script("[[replace]]", append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "outbox/draft.txt", "contents": "first half\n"}),
		llmtest.Tool("wait", map[string]any{"seconds": 20}),
		llmtest.Tool("read_file", map[string]any{"path": "outbox/draft.txt"}),
	}, llmtest.Done("finished in a fresh VM")...)...)
	task := h.create("Write a draft [[replace]]")
	task.VMID, _ = h.resumeHungInFreshVM(task.ID)
	done := h.wait(task.ID, "the end", time.Minute, terminal)
	if done.Status != "completed" || summary(done) != "finished in a fresh VM" {
		t.Fatalf("after the resume: %s %q", done.Status, summary(done))
	}
	h.noSandboxesOf([]string{task.VMID}, 5*time.Second)
	reqs := llm.Requests("[[replace]]")
	var after string
	for _, r := range reqs {
		if strings.Contains(r, "your VM was replaced by a fresh one") {
			after = r
		}
	}
	if after == "" || !strings.Contains(after, "first half") {
		t.Fatalf("the model was not told of the fresh VM, or its outbox file did not come along (%d requests)", len(reqs))
	}
	files, err := h.unix.TaskFiles(context.Background(), task.ID)
	if err != nil || len(files.OutputFiles) != 1 || files.OutputFiles[0].Name != "draft.txt" {
		t.Fatalf("output files %+v, %v", files, err)
	}
	h.stop()
	checkNothingLeft(t, home, ids)
}

// TestHeldTaskGivesItsVMBack: an LLM that keeps failing holds the task;
// after releasePausedVMMinutes its VM is released (its outbox kept) and a
// queued task gets the slot; resumed once the provider is back, the held
// task goes on in a fresh VM and its outbox file is collected at the end.
func TestHeldTaskGivesItsVMBack(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	helperproc.Settings(t, h.unix, map[string]any{"releasePausedVMMinutes": 0.02})
	fails := make([]llmtest.Turn, 5)
	for i := range fails {
		fails[i] = llmtest.Status(503)
	}
	llm.Script("[[flaky]]", append(append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "outbox/kept.txt", "contents": "written before the outage\n"}),
	}, fails...), append([]llmtest.Turn{llmtest.Tool("read_file", map[string]any{"path": "outbox/kept.txt"})}, llmtest.Done("finished after the outage")...)...)...)
	task := h.create("Write through an outage [[flaky]]")
	held := h.wait(task.ID, "the hold for the LLM error", time.Minute, func(t wire.Task) bool { return isPaused(t) && t.VMID != "" })
	h.ids.Note(held.VMID)
	if !strings.Contains(held.StatusReason, "LLM error") {
		t.Fatalf("held for %q", held.StatusReason)
	}
	released := h.wait(task.ID, "the VM released", 30*time.Second, func(t wire.Task) bool { return t.VMID == "" })
	if !isPaused(released) {
		t.Fatalf("after the release the task is %s", released.Status)
	}
	h.noSandboxesOf([]string{held.VMID}, 5*time.Second)
	h.waitEvent(task.ID, "the release's note", time.Second, func(e wire.Event) bool {
		return strings.Contains(e.Data.Summary, "Released the task's VM") && strings.Contains(e.Data.Summary, "1 outbox file(s) kept")
	})
	// The slot is free: another task runs meanwhile.
	h.completes(llm, "[[meanwhile]]")
	resume(t, h, task.ID, 0)
	done := h.wait(task.ID, "the end", time.Minute, terminal)
	if done.Status != "completed" || summary(done) != "finished after the outage" {
		t.Fatalf("after the resume: %s %q", done.Status, summary(done))
	}
	reqs := llm.Requests("[[flaky]]")
	if last := reqs[len(reqs)-2]; !strings.Contains(last, "written before the outage") {
		t.Errorf("the fresh VM lacks the kept outbox file: %.400s", last)
	}
	files, err := h.unix.TaskFiles(context.Background(), task.ID)
	if err != nil || len(files.OutputFiles) != 1 || files.OutputFiles[0].Name != "kept.txt" {
		t.Fatalf("output files %+v, %v", files, err)
	}
	h.stop()
	checkNothingLeft(t, home, ids)
}

// TestTaskAtItsLimitIsContinued: a task at its step limit is held, not
// ended; resumed with extraSteps it goes on and completes.
func TestTaskAtItsLimitIsContinued(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	llm.Script("[[long]]", append([]llmtest.Turn{
		llmtest.Tool("wait", map[string]any{"seconds": 0}),
		llmtest.Tool("wait", map[string]any{"seconds": 0}),
		llmtest.Tool("wait", map[string]any{"seconds": 0}),
	}, llmtest.Done("finished with more steps")...)...)
	created, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "A long task [[long]]", MaxIterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	held := h.wait(created.ID, "the hold at the limit", time.Minute, isPaused)
	h.ids.Note(held.VMID)
	if !strings.Contains(held.StatusReason, "reached its limit of 2 steps") || held.StepCount == nil || *held.StepCount != 2 {
		t.Fatalf("held %q after %v steps", held.StatusReason, held.StepCount)
	}
	resume(t, h, created.ID, 3)
	done := h.wait(created.ID, "the end", time.Minute, terminal)
	if done.Status != "completed" || summary(done) != "finished with more steps" || done.StepCount == nil || *done.StepCount != 4 {
		t.Fatalf("after the resume: %s %q after %v steps", done.Status, summary(done), done.StepCount)
	}
	h.stop()
	checkNothingLeft(t, home, ids)
}
