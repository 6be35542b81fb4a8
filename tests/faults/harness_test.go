package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

// bin holds hivecrew, hivecrew-helper and hivecrew-guestagent.
var bin string

func TestMain(m *testing.M) {
	dir, cleanup, err := testbin.BuildAll()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// helper is a running helper with real sandboxes: the hivecrew-helper
// process (startProcess) or core/daemon in this test process (startInProc).
type helper struct {
	t    *testing.T
	home string
	// pid is the process the helper runs in: its sandboxes are its children.
	pid  int
	addr string
	key  string
	unix *client.Client
	// ids are the VMs this helper made (see watchVMs).
	ids *vmIDs

	cmd    *exec.Cmd  // process only
	exited chan error // process only
	stopIn func()     // in-process only
	// mu guards logs.
	mu   sync.Mutex
	logs bytes.Buffer
}

func (h *helper) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.Write(b)
}

func (h *helper) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// newHome returns a fresh, short data directory whose VM ids are watched,
// and checks, once the test's helpers have stopped (cleanups run last
// first, so this one runs after theirs), that nothing of them is left:
// no sandbox process, staging folder, mount or VM folder of one of its
// VMs, a database that passes its integrity check, and traces that read
// back.
func newHome(t *testing.T) (string, *vmIDs) {
	t.Helper()
	home := daemontest.NewHome(t)
	ids := watchVMs(t, home)
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
func startProcess(t *testing.T, home string, ids *vmIDs) *helper {
	t.Helper()
	h := &helper{t: t, home: home, ids: ids, exited: make(chan error, 1)}
	h.cmd = exec.Command(filepath.Join(bin, "hivecrew-helper"), "serve", "--home", home, "--addr", "127.0.0.1:0", "--print-api-key")
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stderr = h
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.pid = h.cmd.Process.Pid
	go func() { h.exited <- h.cmd.Wait() }()
	h.addr, h.key = daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if h.addr == "" {
		h.cmd.Process.Kill()
		t.Fatalf("helper did not start:\n%s", h.logText())
	}
	h.unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			h.term()
		}
		if t.Failed() {
			t.Logf("helper %d log:\n%s", h.pid, h.logText())
		}
	})
	return h
}

// startInProc runs the helper in this process with the sandbox backend and
// a 1 ms first LLM retry wait (the command line has no such knob).
func startInProc(t *testing.T, home string, ids *vmIDs) *helper {
	t.Helper()
	h := &helper{t: t, home: home, ids: ids, pid: os.Getpid()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("helper log:\n%s", h.logText())
		}
	})
	d := daemontest.StartAt(t, home, func(c *daemon.Config) {
		c.Backend = nil // the platform's: sandboxes
		c.GuestAgent = filepath.Join(bin, "hivecrew-guestagent")
		c.Log = slog.New(slog.NewTextHandler(h, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	h.addr, h.key, h.unix, h.stopIn = d.Addr, d.Key, d.Unix, d.Stop
	return h
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
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			h.t.Errorf("helper exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-h.exited
		h.t.Errorf("helper did not stop within 30 s of SIGTERM")
	}
}

// kill SIGKILLs the helper process.
func (h *helper) kill() {
	h.cmd.Process.Kill()
	<-h.exited
}

// setup points the helper at the scripted provider llmURL (the default
// provider) and sets the capacity: n VMs at once, none kept warm.
func (h *helper) setup(llmURL string, n int) {
	h.t.Helper()
	ctx := context.Background()
	name, model, key := "Scripted", "scripted", "sk-test"
	if _, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &llmURL, APIKey: &key, DefaultModelID: &model}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"maxConcurrentVMs": n, "warmPoolSize": 0, "vmMemoryMB": 1024, "vmCpuCount": 1}); err != nil {
		h.t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for { // the warm VM booted with the first settings goes
		vms, err := h.unix.VMs(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		if len(vms) == 0 {
			return
		}
		for _, v := range vms {
			h.unix.RemoveVM(ctx, v.ID)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("warm VMs remain: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// vmIDs collects the ids of the VMs one data directory's helpers make: a
// VM's folder under VMs/ exists from its creation on, and a watcher notes
// every folder it sees there.
type vmIDs struct {
	// mu guards seen.
	mu   sync.Mutex
	seen map[string]bool
}

func watchVMs(t *testing.T, home string) *vmIDs {
	ids := &vmIDs{seen: map[string]bool{}}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			ids.scan(home)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped; ids.scan(home) })
	return ids
}

func (v *vmIDs) scan(home string) {
	ents, _ := os.ReadDir(filepath.Join(home, "VMs"))
	for _, e := range ents {
		v.note(e.Name())
	}
}

func (v *vmIDs) note(id string) {
	if id == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen[id] = true
}

func (v *vmIDs) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for id := range v.seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// proc is a process as /proc shows it.
type proc struct {
	pid, ppid int
	cmdline   string
}

// processes lists the machine's processes.
func processes() map[int]proc {
	out := map[int]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = proc{pid: pid, ppid: ppid, cmdline: strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))}
	}
	return out
}

func isBwrap(p proc) bool {
	return filepath.Base(strings.SplitN(p.cmdline, " ", 2)[0]) == "bwrap"
}

// sandboxesOf lists the bubblewrap processes of the VMs ids (a sandbox's
// command line names its VM's staging folder and cgroup by id).
func sandboxesOf(ids []string) []proc {
	var out []proc
	for _, p := range processes() {
		if !isBwrap(p) {
			continue
		}
		for _, id := range ids {
			if strings.Contains(p.cmdline, id) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// sandbox is the processes of one running VM.
type sandbox struct {
	outer, pid1, agent int
}

// sandboxOf finds VM id's sandbox: the bubblewrap process the helper (pid)
// started, the sandbox's PID 1 under it and the guest agent under that.
func sandboxOf(t *testing.T, helperPID int, id string) sandbox {
	t.Helper()
	var s sandbox
	all := processes()
	for _, p := range sandboxesOf([]string{id}) {
		if p.ppid == helperPID {
			s.outer = p.pid
		}
	}
	if s.outer == 0 {
		t.Fatalf("no sandbox of %s is a child of the helper %d (bubblewrap processes of it: %+v)", id, helperPID, sandboxesOf([]string{id}))
	}
	for _, p := range all {
		if p.ppid == s.outer && isBwrap(p) {
			s.pid1 = p.pid
		}
	}
	for _, p := range all {
		if s.pid1 != 0 && p.ppid == s.pid1 && strings.Contains(p.cmdline, "hivecrew-guestagent") && strings.Contains(p.cmdline, "--session") {
			s.agent = p.pid
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
	for _, p := range sandboxesOf(ids) {
		out = append(out, fmt.Sprintf("process %d: %s", p.pid, p.cmdline))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, home+"/") {
			out = append(out, "mount: "+line)
			continue
		}
		for _, id := range ids {
			if strings.Contains(line, "/hivecrew-sandbox/"+id+"/") {
				out = append(out, "mount: "+line)
				break
			}
		}
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join("/run/hivecrew-sandbox", id)); err == nil {
			out = append(out, "staging folder /run/hivecrew-sandbox/"+id)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(home, "VMs"))
	for _, e := range ents {
		out = append(out, "VM folder "+e.Name())
	}
	return out
}

// noSandboxesOf waits up to within for the VMs ids to have no sandbox
// process left, and fails the test if one stays.
func noSandboxesOf(t *testing.T, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := sandboxesOf(ids)
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
func checkNothingLeft(t *testing.T, home string, ids *vmIDs) {
	t.Helper()
	list := ids.list()
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
func openStore(t *testing.T, home string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(home, "hivecrew.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

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
