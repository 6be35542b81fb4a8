package faults

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// bin holds hivecrew, hivecrew-helper and hivecrew-guestagent.
var bin string

func TestMain(m *testing.M) { helperproc.Main(m, &bin) }

// helper is a running helper with real sandboxes: the hivecrew-helper
// process (startProcess) or core/daemon in this test process (startInProc).
type helper struct {
	t    *testing.T
	home string
	// pid is the process the helper runs in: its sandboxes are its children.
	pid  int
	unix *client.Client
	// ids are the VMs this home's helpers made (see newHome).
	ids *helperproc.VMIDs

	proc   *helperproc.Proc // process only
	stopIn func()           // in-process only
}

// newHome returns a fresh, short data directory whose VM ids are watched,
// and checks, once the test's helpers have stopped (cleanups run last
// first, so this one runs after theirs), that nothing of them is left:
// no sandbox process, staging folder, mount or VM folder of one of its
// VMs, a database that passes its integrity check, and traces that read
// back.
func newHome(t *testing.T) (string, *helperproc.VMIDs) {
	t.Helper()
	home := daemontest.NewHome(t)
	ids := helperproc.Watch(t, home)
	t.Cleanup(func() {
		if t.Failed() {
			return // the failure says what went wrong; no pile-up
		}
		checkNothingLeft(t, home, ids)
		checkStoreAndTraces(t, home)
	})
	return home, ids
}

// startProcess starts the hivecrew-helper process on home.
func startProcess(t *testing.T, home string, ids *helperproc.VMIDs) *helper {
	t.Helper()
	p := helperproc.Start(t, bin, home)
	return &helper{t: t, home: home, pid: p.Pid, unix: p.Unix, ids: ids, proc: p}
}

// startInProc runs the helper in this process with the sandbox backend and
// a 1 ms first LLM retry wait (the command line has no such knob).
func startInProc(t *testing.T, home string, ids *helperproc.VMIDs) *helper {
	t.Helper()
	var logs helperproc.LogBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("helper log:\n%s", logs.String())
		}
	})
	d := daemontest.StartAt(t, home, func(c *daemon.Config) {
		c.Backend = nil // the platform's: sandboxes
		c.GuestAgent = filepath.Join(bin, "hivecrew-guestagent")
		c.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	return &helper{t: t, home: home, pid: os.Getpid(), unix: d.Unix, ids: ids, stopIn: d.Stop}
}

// stop stops the helper cleanly.
func (h *helper) stop() {
	h.t.Helper()
	if h.stopIn != nil {
		h.stopIn()
		return
	}
	h.term()
}

// term sends SIGTERM and waits for a clean exit.
func (h *helper) term() {
	h.t.Helper()
	if err := h.proc.Term(30 * time.Second); err != nil {
		h.t.Error(err)
	}
}

// kill SIGKILLs the helper process.
func (h *helper) kill() { h.proc.Kill() }

// setup points the helper at the scripted provider llmURL (the default
// provider) and sets the capacity: n VMs at once, none kept warm.
func (h *helper) setup(llmURL string, n int) {
	h.t.Helper()
	helperproc.AddProvider(h.t, h.unix, "Scripted", llmURL, "sk-test")
	helperproc.Settings(h.t, h.unix, map[string]any{"maxConcurrentVMs": n, "warmPoolSize": 0, "vmMemoryMB": 1024, "vmCpuCount": 1})
	helperproc.DropWarmVMs(h.t, h.unix) // the warm VM booted with the first settings goes
}

// create queues a task.
func (h *helper) create(description string) wire.Task {
	h.t.Helper()
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: description})
	if err != nil {
		h.t.Fatal(err)
	}
	return task
}

// wait polls a task until ok says so.
func (h *helper) wait(id, what string, within time.Duration, ok func(wire.Task) bool) wire.Task {
	h.t.Helper()
	return daemontest.WaitTask(h.t, h.unix, id, what, within, ok)
}

// waitEvent polls a task's activity until an event satisfies ok.
func (h *helper) waitEvent(id, what string, within time.Duration, ok func(wire.Event) bool) wire.Event {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		act, err := h.unix.Activity(context.Background(), id, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range act.Events {
			if ok(e) {
				return e
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; events: %s", what, summaries(act.Events))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func summaries(es []wire.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %d %s: %s", e.Seq, e.Type, e.Data.Summary)
	}
	return b.String()
}

func terminal(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }

func summary(t wire.Task) string {
	if t.ResultSummary == nil {
		return ""
	}
	return *t.ResultSummary
}

// completes runs a short task to its successful end: the helper is
// healthy after a fault.
func (h *helper) completes(llm *llmtest.Server, marker string) {
	h.t.Helper()
	llm.Script(marker, append([]llmtest.Turn{llmtest.Tool("mouse_click", map[string]any{"x": 10, "y": 10})}, llmtest.Done("all well "+marker)...)...)
	task := h.create("A healthy task " + marker)
	done := h.wait(task.ID, "the healthy task's end", time.Minute, terminal)
	if done.Status != "completed" || summary(done) != "all well "+marker {
		h.t.Fatalf("after the fault, a new task ended %s: %q", done.Status, summary(done))
	}
}

// sandbox is the processes of one running VM.
type sandbox struct {
	outer, pid1, agent int
}

// sandboxOf finds VM id's sandbox: the bubblewrap process the helper
// started, the sandbox's PID 1 under it and the guest agent under that.
func (h *helper) sandboxOf(id string) sandbox {
	t := h.t
	t.Helper()
	var s sandbox
	all := helperproc.All()
	mine := helperproc.Sandboxes(h.home, []string{id})
	for _, p := range mine {
		if p.PPID == h.pid {
			s.outer = p.PID
		}
	}
	if s.outer == 0 {
		t.Fatalf("no sandbox of %s is a child of the helper %d (bubblewrap processes of it: %+v)", id, h.pid, mine)
	}
	for _, p := range all {
		if p.PPID == s.outer && helperproc.IsBwrap(p) {
			s.pid1 = p.PID
		}
	}
	for _, p := range all {
		if s.pid1 != 0 && p.PPID == s.pid1 && strings.Contains(p.Cmdline, "hivecrew-guestagent") && strings.Contains(p.Cmdline, "--session") {
			s.agent = p.PID
		}
	}
	if s.pid1 == 0 || s.agent == 0 {
		t.Fatalf("sandbox of %s: bubblewrap %d, PID 1 %d, guest agent %d", id, s.outer, s.pid1, s.agent)
	}
	return s
}

// leftovers lists what remains of the VMs ids: sandbox processes, staging
// folders, mounts (of them or of home) and VM folders under home.
func leftovers(home string, ids []string) []string {
	var out []string
	for _, p := range helperproc.Sandboxes(home, ids) {
		out = append(out, "process "+p.String())
	}
	for _, line := range helperproc.Mounts(home, ids) {
		out = append(out, "mount: "+line)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(helperproc.StageRoot, id)); err == nil {
			out = append(out, "staging folder "+filepath.Join(helperproc.StageRoot, id))
		}
	}
	for _, id := range helperproc.VMDirs(home) {
		out = append(out, "VM folder "+id)
	}
	for _, dir := range cgroupsOf(ids) {
		out = append(out, "cgroup "+dir)
	}
	return out
}

// cgroupsOf lists the cgroup v1 groups of the VMs ids that exist, below
// this process's own groups, which the helpers it starts share.
func cgroupsOf(ids []string) []string {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !slices.Contains([]string{"pids", "memory", "cpu,cpuacct", "cpu", "freezer"}, f[1]) {
			continue
		}
		ctrl := strings.Split(f[1], ",")[0]
		for _, id := range ids {
			if id == "" {
				continue
			}
			dir := filepath.Join("/sys/fs/cgroup", ctrl, f[2], "hivecrew", id)
			if _, err := os.Stat(dir); err == nil {
				out = append(out, dir)
			}
		}
	}
	return out
}

// noSandboxesOf waits up to within for the helper's VMs ids to have no
// sandbox process left, and fails the test if one stays.
func (h *helper) noSandboxesOf(ids []string, within time.Duration) {
	t := h.t
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := helperproc.Sandboxes(h.home, ids)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes of %v still running after %s: %+v", ids, within, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkNothingLeft fails the test when anything of the VMs ids remains.
func checkNothingLeft(t *testing.T, home string, ids *helperproc.VMIDs) {
	t.Helper()
	list := ids.List()
	if len(list) == 0 {
		t.Errorf("no VM was ever seen under %s: the test did not exercise a sandbox", home)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := leftovers(home, list)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind by the helper's VMs %v:\n%s", list, strings.Join(left, "\n"))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openStore opens a stopped helper's database.
func openStore(t *testing.T, home string) *store.Store { return helperproc.OpenStore(t, home) }

// checkStoreAndTraces runs the database's integrity check and reads every
// session's trace back: events numbered 1, 2, 3... with nothing but a cut
// last line missing.
func checkStoreAndTraces(t *testing.T, home string) {
	t.Helper()
	st := openStore(t, home)
	if err := st.IntegrityCheck(context.Background()); err != nil {
		t.Errorf("after the fault: %v", err)
	}
	st.Close()
	sessions, _ := os.ReadDir(filepath.Join(home, "Sessions"))
	for _, s := range sessions {
		if !s.IsDir() {
			continue
		}
		readTrace(t, filepath.Join(home, "Sessions", s.Name()))
	}
}

// readTrace reads a session's trace and checks its numbering.
func readTrace(t *testing.T, dir string) trace.Session {
	t.Helper()
	s, err := trace.Read(dir)
	if err != nil {
		t.Errorf("trace %s: %v", dir, err)
		return s
	}
	for i, e := range s.Events {
		if e.Seq != i+1 {
			t.Errorf("trace %s: event %d has seq %d", dir, i+1, e.Seq)
			break
		}
	}
	return s
}

// sessionOf returns the trace folder of a task, from its stopped helper's
// database.
func sessionOf(t *testing.T, home, taskID string) string {
	t.Helper()
	st := openStore(t, home)
	defer st.Close()
	task, err := st.GetTask(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if task.SessionID == "" {
		t.Fatalf("task %s has no session", taskID)
	}
	return filepath.Join(home, "Sessions", task.SessionID)
}
