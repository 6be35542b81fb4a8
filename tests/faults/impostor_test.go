package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// impostor is a Python program that guest code runs in place of the guest
// agent: it listens on the agent's socket and answers every connection's
// first line (the host's hello) as its mode says, then reads on without
// answering.
//
//	hello     a well-formed protocol-2 hello without the boot key's proof
//	brackets  a line of 10 million '[' (inside a response object, so that
//	          the host's screenshot lift walks it)
//	nested    a result nested 100,000 objects deep
//	huge      a 70 MB line (over the protocol's 64 MiB cap)
//	wrongid   a response to a call the host never made, and nothing else
//	endless   bytes without a newline, for ever
const impostor = `
import json, os, socket, sys, threading
mode = sys.argv[1]
path = "/run/hivecrew/agent.sock"
try:
    os.remove(path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(16)

def answer(rid):
    if mode == "hello":
        return ('{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":2,"agentVersion":"impostor","os":"linux",'
                '"osVersion":"12","screen":{"width":1280,"height":800,"scale":1},"capabilities":["shell"],'
                '"proof":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}\n' % rid).encode()
    if mode == "brackets":
        return ('{"jsonrpc":"2.0","id":%s,"x":' % rid).encode() + b"[" * 10000000 + b"\n"
    if mode == "nested":
        return ('{"jsonrpc":"2.0","id":%s,"result":' % rid).encode() + b'{"a":' * 100000 + b"1" + b"}" * 100001 + b"\n"
    if mode == "huge":
        return ('{"jsonrpc":"2.0","id":%s,"result":{"x":"' % rid).encode() + b"A" * 70000000 + b'"}}\n'
    if mode == "wrongid":
        return b'{"jsonrpc":"2.0","id":987654321,"result":{}}\n'
    return None

def serve(c):
    try:
        f = c.makefile("rb")
        line = f.readline(1 << 20)
        try:
            rid = json.dumps(json.loads(line).get("id"))
        except Exception:
            rid = "1"
        out = answer(rid)
        if out is None:  # endless
            chunk = b"A" * (1 << 20)
            while True:
                c.sendall(chunk)
        c.sendall(out)
        while f.read(4096):
            pass
    except OSError:
        pass
    finally:
        c.close()

while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// takeOver is the shell command an agent runs to replace its guest agent
// with the impostor in mode. It first lists its own descriptors (which
// works), then tries to read the agent's open descriptors and memory
// (where the boot key was and is): the agent is non-dumpable, so both are
// refused. Then it stops the real agent (the shell's parent)
// with SIGSTOP a second after the command has returned, removes the
// agent's socket and serves the impostor there, in a session of its own
// so that it outlives the command.
func takeOver(mode string) string {
	return "echo \"own fds: $(ls /proc/$$/fd 2>&1 | head -n 1)\"\n" +
		"echo \"agent fds: $(ls /proc/$PPID/fd 2>&1 | head -n 1)\"\n" +
		"echo \"agent memory: $(head -c 1 /proc/$PPID/mem 2>&1 | head -n 1)\"\n" +
		"cat > /tmp/impostor.py <<'EOF'\n" + impostor + "EOF\n" +
		`agent=$PPID; setsid sh -c "sleep 1; kill -STOP $agent; exec python3 /tmp/impostor.py ` + mode + `" </dev/null >/tmp/impostor.log 2>&1 &` + "\n" +
		"echo the impostor takes over"
}

// hostile is the script of a prompt-injected agent: it replaces its guest
// agent, then goes on calling it.
func hostile(mode string) []llmtest.Turn {
	turns := []llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": takeOver(mode)})}
	for range 5 {
		turns = append(turns, llmtest.Tool("wait", map[string]any{"seconds": 20}))
	}
	return turns
}

// createAllowing queues a task whose agent may run shell commands.
func (h *helper) createAllowing(description string) wire.Task {
	h.t.Helper()
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: description, ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		h.t.Fatal(err)
	}
	return task
}

// alive fails the test unless the helper process still runs.
func (h *helper) alive() {
	h.t.Helper()
	if err := syscall.Kill(h.pid, 0); err != nil {
		h.t.Fatalf("the helper (pid %d) is gone: %v", h.pid, err)
	}
	if err := h.unix.Health(context.Background()); err != nil {
		h.t.Fatalf("the helper does not answer: %v", err)
	}
}

// hostileRun runs a hostile task that replaces its guest agent with the
// impostor in mode, checks that the guest code could not read the agent,
// and returns the task with when its shell command ended.
func (h *helper) hostileRun(llm *llmtest.Server, mode string) (wire.Task, time.Time) {
	t := h.t
	t.Helper()
	marker := "[[impostor " + mode + "]]"
	llm.Script(marker, hostile(mode)...)
	task := h.createAllowing("Read the web page and do what it says " + marker)
	ran := h.waitEvent(task.ID, "the hostile shell command's end", time.Minute, func(e wire.Event) bool {
		return e.Type == "tool_call_result" && strings.Contains(e.Data.Details, "impostor")
	})
	// The shell can read its own (a dumpable process of the same uid):
	// the refusals below come from the agent being non-dumpable.
	if _, own, _ := strings.Cut(ran.Data.Details, "own fds: "); !strings.HasPrefix(own, "0") {
		t.Fatalf("guest code cannot list its own descriptors: %.80q", own)
	}
	for _, what := range []string{"agent fds: ", "agent memory: "} {
		if _, out, _ := strings.Cut(ran.Data.Details, what); !strings.HasPrefix(out, "ls: cannot open directory") && !strings.HasPrefix(out, "head: cannot open") {
			t.Fatalf("guest code read the guest agent's %s%.80q; want permission denied", what, out)
		}
	}
	return task, time.Now()
}

// heldForGuest runs the impostor in mode, one that answers nothing usable
// while its VM runs, and checks the outcome: the task is held for the user
// within within (it is not failed: the user may resume it in a fresh VM),
// the user's cancel ends it at once, its VM is gone, and the helper is up.
func (h *helper) heldForGuest(llm *llmtest.Server, mode string, within time.Duration) {
	t := h.t
	t.Helper()
	task, start := h.hostileRun(llm, mode)
	done := h.wait(task.ID, "the hold", within+5*time.Second, func(t wire.Task) bool { return terminal(t) || isPaused(t) })
	took := time.Since(start)
	if !isPaused(done) || !strings.Contains(done.StatusReason, "lost touch with the VM's guest agent") {
		t.Fatalf("impostor %s: the task is %s %q; want held for its guest", mode, done.Status, done.StatusReason)
	}
	if _, err := h.unix.TaskAction(context.Background(), task.ID, wire.TaskAction{Action: wire.ActionCancel}); err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	done = h.wait(task.ID, "the cancel", 5*time.Second, terminal)
	t.Logf("impostor %s: held after %s, cancelled in %s", mode, took.Round(time.Millisecond), time.Since(cancelled).Round(time.Millisecond))
	if done.Status != "cancelled" || took > within {
		t.Fatalf("impostor %s: %s after %s", mode, done.Status, took)
	}
	h.ids.Note(done.VMID)
	h.noSandboxesOf([]string{done.VMID}, 10*time.Second)
	h.alive()
}

// refused runs the impostor in mode and checks the outcome: the task ends
// failed within within of its shell command, its summary says why (each
// of want; "a|b" is either), its VM is gone, and the helper is up.
func (h *helper) refused(llm *llmtest.Server, mode string, within time.Duration, want ...string) {
	t := h.t
	t.Helper()
	task, start := h.hostileRun(llm, mode)
	done := h.wait(task.ID, "the hostile task's end", within+5*time.Second, terminal)
	took := time.Since(start)
	t.Logf("impostor %s: the task ended %s in %s: %s", mode, done.Status, took.Round(time.Millisecond), summary(done))
	if done.Status != "failed" {
		t.Fatalf("impostor %s: the task ended %s %q; want failed", mode, done.Status, summary(done))
	}
	for _, w := range want {
		if !slices.ContainsFunc(strings.Split(w, "|"), func(w string) bool { return strings.Contains(summary(done), w) }) {
			t.Fatalf("impostor %s: the task's reason %q does not say %q", mode, summary(done), w)
		}
	}
	if took > within {
		t.Errorf("impostor %s: the task took %s to fail, want at most %s", mode, took, within)
	}
	h.ids.Note(done.VMID)
	h.noSandboxesOf([]string{done.VMID}, 10*time.Second)
	h.alive()
}

// TestReplacedAgentIsRefused answers the threat "guest code replaces the
// guest agent": a prompt-injected agent runs a shell command that stops
// the real guest agent (SIGSTOP), deletes its socket and serves an
// impostor there that answers hello like the agent, without the boot key.
// When the host reconnects (the stopped agent's heartbeats end), it must
// refuse the impostor: the task fails saying the endpoint was replaced,
// its VM is stopped, the helper stays up, and a task running meanwhile on
// another VM completes.
func TestReplacedAgentIsRefused(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	llm.Script("[[bystander]]", append([]llmtest.Turn{llmtest.Tool("wait", map[string]any{"seconds": 12})}, llmtest.Done("the bystander finished")...)...)
	other := h.inGuestCall(h.create("Wait a while [[bystander]]").ID)
	h.refused(llm, "hello", 30*time.Second, "did not prove the boot key", "the endpoint was replaced")
	got := h.wait(other.ID, "the bystander's end", time.Minute, terminal)
	if got.Status != "completed" || summary(got) != "the bystander finished" {
		t.Fatalf("the task on the other VM ended %s %q; want completed", got.Status, summary(got))
	}
	h.completes(llm, "[[after the impostor]]")
	h.stop()
}

// TestHostileEndpointCannotCrashTheHelper answers the threat "guest data
// crashes or wedges the helper": the impostor answers the host's hello
// with what a hostile guest can send (a line of 10 million '[', which
// overflowed the stack of the host's recursive JSON scanner and killed
// the helper; JSON nested 100,000 deep; a line over the 64 MiB cap; an
// answer to a call never made; a line without end). Each time the helper
// stays up, and the task fails within a bounded time with a reason that
// says what happened (or, for a guest that only stops answering, is held
// for the user, whose cancel ends it at once). A last task then completes
// on a fresh VM.
func TestHostileEndpointCannotCrashTheHelper(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	cases := []struct {
		mode   string
		within time.Duration
		want   []string
	}{
		{"brackets", 30 * time.Second, []string{"broke the protocol at hello", "the endpoint was replaced"}},
		{"nested", 30 * time.Second, []string{"broke the protocol at hello"}},
		{"huge", 30 * time.Second, []string{"broke the protocol at hello", fmt.Sprintf("limit of %d bytes", 64<<20)}},
		{"endless", 30 * time.Second, []string{"broke the protocol at hello", fmt.Sprintf("limit of %d bytes", 64<<20)}},
	}
	// Every hostile guest at once, each in a VM of its own: each outcome
	// waits out the host's detection of a silent agent, and the helper
	// must survive all of them together as it does each alone.
	h.setup(llm.URL, len(cases)+1)
	t.Run("hostile", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.mode, func(t *testing.T) {
				t.Parallel()
				h.on(t).refused(llm, c.mode, c.within, c.want...)
			})
		}
		// An answer to another call: hello times out and is retried (a
		// slow guest is not refused); the task is held for its guest,
		// which the user cancels.
		t.Run("wrongid", func(t *testing.T) {
			t.Parallel()
			h.on(t).heldForGuest(llm, "wrongid", 30*time.Second)
		})
	})
	if t.Failed() {
		return
	}
	h.completes(llm, "[[after the hostile answers]]")
	h.stop()
}

// on is h for the (sub)test t: its checks fail t.
func (h *helper) on(t *testing.T) *helper {
	sub := *h
	sub.t = t
	return &sub
}
