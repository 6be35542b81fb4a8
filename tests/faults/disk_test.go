package faults

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// smallDisk mounts a tmpfs of size bytes on dir until the test ends.
func smallDisk(t *testing.T, dir string, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs on %s (the test needs root): %v %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
}

// fill writes a file in dir until the filesystem has at most room bytes
// left.
func fill(t *testing.T, dir string, room int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, zeros{}, max(free-room, 0)); err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	return path
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestTraceOnFullDisk: the Sessions folder is a small tmpfs that fills up
// while an agent works. The task fails with the disk's error as its
// reason instead of running on unrecorded; its trace reads back up to
// where the disk was full; once there is room again the helper runs the
// next task.
func TestTraceOnFullDisk(t *testing.T) {
	home, ids := newHome(t)
	sessions := filepath.Join(home, "Sessions")
	smallDisk(t, sessions, "2m")
	filler := fill(t, sessions, 48<<10)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	click := llmtest.Tool("mouse_click", map[string]any{"x": 30, "y": 30})
	click.Repeat = true
	llm.Script("[[full]]", click)
	task := h.create("Click forever [[full]]")
	done := h.wait(task.ID, "the task's end", time.Minute, terminal)
	t.Logf("task on a full disk: %s after %v steps: %s", done.Status, *done.StepCount, summary(done))
	if done.Status != "failed" || !strings.Contains(summary(done), "no space left on device") {
		t.Fatalf("task whose trace could not be written ended %s: %q; want failed with the disk's error", done.Status, summary(done))
	}
	h.noSandboxesOf([]string{done.VMID}, 5*time.Second)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	h.completes(llm, "[[roomy]]")
	h.stop()
	tr := readTrace(t, sessionOf(t, home, task.ID))
	if len(tr.Events) == 0 {
		t.Fatal("nothing of the failed task's trace reads back")
	}
	t.Logf("trace: %d events read back (last line cut: %v)", len(tr.Events), tr.Truncated)
}

// sqliteLock is an sqlite3 process holding a database's write lock.
type sqliteLock struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// lockStore takes the helper's database write lock from another process
// (the sqlite3 shell, BEGIN EXCLUSIVE) and returns once it is held.
func lockStore(t *testing.T, home string) *sqliteLock {
	t.Helper()
	cmd := exec.Command("sqlite3", filepath.Join(home, "hivecrew.db"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("sqlite3 (run make deps): %v", err)
	}
	l := &sqliteLock{cmd: cmd, stdin: stdin}
	t.Cleanup(l.release)
	io.WriteString(stdin, ".timeout 10000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("sqlite3 did not take the lock: %q %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	return l
}

// release ends the transaction and the process.
func (l *sqliteLock) release() {
	if l.cmd.ProcessState != nil {
		return
	}
	io.WriteString(l.stdin, "ROLLBACK;\n.quit\n")
	l.stdin.Close()
	l.cmd.Wait()
}

// TestStoreLockedByAnotherProcess: another process holds the database's
// write lock for longer than the store's busy timeout. Reads go on; a new
// task is refused with a 503 that says the database is locked; a running
// agent waits and then completes; another running agent cancelled while
// the lock is held, whose end could not be written then, is recorded as
// cancelled once the lock is gone, and the cancel answers. No task is
// lost, and the database is sound.
func TestStoreLockedByAnotherProcess(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 2)
	ctx := context.Background()
	llm.Script("[[steady]]", llmtest.Tool("wait", map[string]any{"seconds": 2}), llmtest.Tool("mouse_click", map[string]any{"x": 1, "y": 1}), llmtest.Text("I am done."), llmtest.Verdict(true, "steady done"))
	llm.Script("[[cancelled]]", llmtest.Tool("wait", map[string]any{"seconds": 60}), llmtest.Text("I am done."), llmtest.Verdict(true, "never"))
	steady := h.inGuestCall(h.create("Work [[steady]]").ID)
	victim := h.inGuestCall(h.create("Wait to be cancelled [[cancelled]]").ID)

	lock := lockStore(t, home)
	locked := time.Now()
	// Reads are not blocked by a writer.
	if _, err := h.unix.ListTasks(ctx, client.TaskQuery{Limit: 5}); err != nil {
		t.Fatalf("list tasks while the store is locked: %v", err)
	}
	if took := time.Since(locked); took > time.Second {
		t.Errorf("a read took %s while another process held the write lock", took)
	}
	cancelled := make(chan error, 1)
	go func() {
		_, err := h.unix.TaskAction(ctx, victim.ID, wire.TaskAction{Action: wire.ActionCancel})
		cancelled <- err
	}()
	// A write waits for the busy timeout, then fails clearly.
	_, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Refused while locked"})
	took := time.Since(locked)
	t.Logf("create while locked: %v after %s", err, took.Round(time.Millisecond))
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "database is locked by another process") {
		t.Fatalf("create while the store is locked = %v; want unavailable, saying the database is locked", err)
	}
	time.Sleep(time.Until(locked.Add(12 * time.Second)))
	lock.release()

	got := h.wait(victim.ID, "the cancelled task's end", 30*time.Second, terminal)
	if got.Status != "cancelled" {
		t.Errorf("task cancelled while the store was locked: %s %q", got.Status, summary(got))
	}
	select {
	case err := <-cancelled:
		if err != nil {
			t.Errorf("cancel while the store was locked: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the cancel never answered")
	}
	got = h.wait(steady.ID, "the steady task's end", time.Minute, terminal)
	if got.Status != "completed" || summary(got) != "steady done" {
		t.Errorf("task running through the lock: %s %q", got.Status, summary(got))
	}
	all, err := h.unix.ListTasks(ctx, client.TaskQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 2 {
		t.Errorf("%d tasks after the lock, want the 2 accepted ones", all.Total)
	}
	h.completes(llm, "[[unlocked]]")
}
