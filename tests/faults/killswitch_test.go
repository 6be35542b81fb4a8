package faults

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// swapper is what a prompt-injected agent runs to defeat the kill switch:
// it fills the outbox, then, in a session of its own that outlives the
// command, keeps renaming FIFOs over the outbox files (a helper that lists
// a regular file and then opens it without O_NONBLOCK waits forever for a
// writer), holds one open, and leaves a socket and a link to /etc/shadow.
const swapper = `mkdir -p "$HIVECREW_SHARED/outbox" && cd "$HIVECREW_SHARED/outbox" || exit 1
for i in 1 2 3 4 5 6 7 8; do echo data > report$i.txt; done
ln -s /etc/shadow shadow.txt
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("socket.txt")'
setsid sh -c 'while :; do for i in 1 2 3 4 5 6 7 8; do mkfifo f$i 2>/dev/null; mv -f f$i report$i.txt; echo data > r$i; mv -f r$i report$i.txt; done; done' </dev/null >/dev/null 2>&1 &
setsid sh -c 'exec sleep 1000 < report8.txt' </dev/null >/dev/null 2>&1 &
echo swapping FIFOs`

// hostileOutbox runs a task whose agent starts the swapper and then waits,
// and returns it once the swapper runs.
func (h *helper) hostileOutbox(llm *llmtest.Server, marker string) wire.Task {
	h.t.Helper()
	turns := []llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": swapper})}
	for range 5 {
		turns = append(turns, llmtest.Tool("wait", map[string]any{"seconds": 30}))
	}
	llm.Script(marker, turns...)
	task := h.createAllowing("Tidy the outbox " + marker)
	h.waitEvent(task.ID, "the swapper's start", time.Minute, func(e wire.Event) bool {
		return e.Type == "tool_call_result" && strings.Contains(e.Data.Details, "swapping FIFOs")
	})
	task = h.inGuestCall(task.ID)
	time.Sleep(300 * time.Millisecond) // let the swapping go on
	return task
}

// noThreadInFIFOOpen fails the test if a thread of the helper waits in
// the kernel to open a FIFO.
func (h *helper) noThreadInFIFOOpen() {
	h.t.Helper()
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(h.pid) + "/task/*/wchan")
	if len(tasks) == 0 {
		h.t.Fatalf("no threads of the helper (pid %d) to check", h.pid)
	}
	for _, w := range tasks {
		if b, _ := os.ReadFile(w); strings.Contains(string(b), "fifo") {
			h.t.Errorf("helper thread %s waits in %s", filepath.Base(filepath.Dir(w)), b)
		}
	}
}

// TestKillSwitchWinsOverAHostileOutbox answers issue 15.3: a guest that
// swapped a FIFO over an outbox file blocked the helper in open() forever
// while it collected outputs from the running VM; then cancel and
// stop-all timed out, the guest kept running and held its VM slot, and
// helper stop left the process alive. Now the VM is stopped before its
// outbox is read, and outputs are opened without blocking or following
// links. Cancel, stop-all and helper stop each end the task and remove its
// VM within 5 s, and no helper thread is left waiting on a FIFO.
func TestKillSwitchWinsOverAHostileOutbox(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	ctx := context.Background()

	for _, how := range []string{"cancel", "stop-all"} {
		task := h.hostileOutbox(llm, "[["+how+"]]")
		start := time.Now()
		var err error
		if how == "cancel" {
			_, err = h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionCancel})
		} else {
			_, err = h.unix.StopAll(ctx)
		}
		if err != nil {
			t.Fatalf("%s: %v (after %s)", how, err, time.Since(start))
		}
		done := h.wait(task.ID, "the task's end", 5*time.Second-time.Since(start), terminal)
		h.noSandboxesOf([]string{task.VMID}, 5*time.Second-time.Since(start))
		took := time.Since(start)
		t.Logf("%s: the task ended %s and its VM was gone %s after the request", how, done.Status, took.Round(time.Millisecond))
		if done.Status != "cancelled" {
			t.Errorf("%s: the task ended %s %q; want cancelled", how, done.Status, summary(done))
		}
		if took > 5*time.Second {
			t.Errorf("%s took %s; the kill switch must win within 5 s", how, took)
		}
		h.noThreadInFIFOOpen()
		// What was a plain file is collected; nothing else.
		for _, f := range done.OutputFiles {
			if f.Name == "shadow.txt" || f.Name == "socket.txt" {
				t.Errorf("%s: %s was collected", how, f.Name)
			}
		}
	}

	task := h.hostileOutbox(llm, "[[helper stop]]")
	start := time.Now()
	if err := h.proc.Term(5 * time.Second); err != nil {
		t.Fatalf("helper stop: %v", err)
	}
	h.noSandboxesOf([]string{task.VMID}, 5*time.Second-time.Since(start))
	t.Logf("helper stop: the helper and the VM were gone %s after SIGTERM", time.Since(start).Round(time.Millisecond))
}
