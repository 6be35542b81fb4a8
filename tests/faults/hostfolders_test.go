package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// Host folders (issue 20) in a real sandbox: the agent edits one file of a
// granted folder, adds one and deletes one, and, as a hostile guest would,
// writes a git config that runs a command, a link to /etc and a FIFO. The
// review lists exactly the three changes (and the others as refused);
// nothing reaches the host before approval; a host edit made meanwhile is
// a conflict, not overwritten; approving writes the rest; a discarded
// review leaves the host untouched.
func TestHostFolderChangesAreReviewed(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()

	project := func() string {
		dir := filepath.Join(t.TempDir(), "project")
		for name, data := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n", ".git/config": "[core]\n"} {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	const edits = `cd /mnt/shared/folders/project && printf 'alpha, edited\n' > a.txt && printf 'new\n' > new.txt && rm b.txt && ` +
		`printf '[core]\n\tfsmonitor = /tmp/evil\n' > .git/config && ln -s /etc evil && mkfifo pipe && printf 'x' > c.txt && ls -a`
	run := func(dir, marker string) wire.Task {
		llm.Script(marker, append([]llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": edits})}, llmtest.Done("Edited the project.")...)...)
		task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Edit the project " + marker, HostFolders: []string{dir},
			ToolPolicy: map[string]string{"run_shell": "allow"}})
		if err != nil {
			t.Fatal(err)
		}
		done := h.wait(task.ID, "the review", 3*time.Minute, terminal)
		h.ids.Note(done.VMID)
		if done.Status != "writebackReview" || done.EndStatus != "completed" || done.PendingWriteback == nil || done.PendingWriteback.Count != 4 {
			t.Fatalf("task %s (end %s, pending %+v): %q", done.Status, done.EndStatus, done.PendingWriteback, summary(done))
		}
		if !strings.Contains(strings.Join(llm.Requests(marker), "\n"), "folders/project (a copy of the user's "+dir) {
			t.Error("the agent was not told where the folder is")
		}
		return done
	}

	dir := project()
	task := run(dir, "[[folders approve]]")
	// Nothing reached the host before approval.
	for name, data := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n", ".git/config": "[core]\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != data {
			t.Fatalf("%s changed before the review: %q %v", name, b, err)
		}
	}
	rev, err := h.unix.Writeback(ctx, task.ID)
	if err != nil || rev == nil {
		t.Fatalf("review: %+v %v", rev, err)
	}
	byPath := map[string]wire.WritebackItem{}
	for _, it := range rev.Items {
		byPath[it.Path] = it
	}
	for p, want := range map[string]struct{ op, state, operation string }{
		"a.txt": {"modified", "pending", "replace_file"}, "new.txt": {"added", "pending", "copy"}, "b.txt": {"deleted", "pending", "delete"},
		"c.txt":       {"modified", "pending", "replace_file"},
		".git/config": {"modified", "refused", "replace_file"}, "evil": {"added", "refused", "copy"}, "pipe": {"added", "refused", "copy"},
	} {
		it, ok := byPath[p]
		if !ok || it.Op != want.op || it.State != want.state || it.Operation != want.operation {
			t.Errorf("%s: %+v, want %+v", p, it, want)
		}
	}
	if len(rev.Items) != 7 {
		t.Errorf("the review lists %d items: %+v", len(rev.Items), rev.Items)
	}
	if d := byPath["a.txt"].DiffPreview; d == nil || !strings.Contains(*d, "-alpha\n+alpha, edited") {
		t.Errorf("a.txt's diff: %v", d)
	}
	if want := filepath.Join(dir, "a.txt"); byPath["a.txt"].DestinationPath != want {
		t.Errorf("destination %s, want %s", byPath["a.txt"].DestinationPath, want)
	}

	// Meanwhile the user edits c.txt on the host: a conflict.
	if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte("the user's gamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rev, _ = h.unix.Writeback(ctx, task.ID)
	for _, it := range rev.Items {
		if it.Path == "c.txt" && (!it.HasConflict || it.ConflictReason == nil || !strings.Contains(*it.ConflictReason, "changed on this computer")) {
			t.Errorf("c.txt is not shown in conflict: %+v", it)
		}
	}
	if !rev.HasConflicts {
		t.Error("the review has no conflicts")
	}
	// Approve a.txt alone first: the task still waits for the rest.
	after, err := h.unix.DecideWriteback(ctx, task.ID, true, []string{byPath["a.txt"].ID})
	if err != nil || after.Status != "writebackReview" {
		t.Fatalf("approve one: %s %v", after.Status, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "alpha, edited\n" {
		t.Fatalf("a.txt = %q after its approval", b)
	}
	after, err = h.unix.DecideWriteback(ctx, task.ID, true, nil)
	if err != nil || after.Status != "completed" || after.PendingWriteback != nil {
		t.Fatalf("approve all: %s %+v %v", after.Status, after.PendingWriteback, err)
	}
	for name, want := range map[string]string{"a.txt": "alpha, edited\n", "new.txt": "new\n", "c.txt": "the user's gamma\n", ".git/config": "[core]\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b.txt was not deleted: %v", err)
	}
	for _, p := range []string{"evil", "pipe"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s reached the host: %v", p, err)
		}
	}
	if s := summary(after); !strings.Contains(s, "3 written to the host") || !strings.Contains(s, "1 not written (the host file had changed)") {
		t.Errorf("summary: %q", s)
	}
	if len(after.AppliedWritebackPaths) != 3 {
		t.Errorf("applied paths: %v", after.AppliedWritebackPaths)
	}
	if rev, err := h.unix.Writeback(ctx, task.ID); err != nil || rev != nil {
		t.Errorf("a review after it was done: %+v %v", rev, err)
	}
	if _, err := h.unix.DecideWriteback(ctx, task.ID, true, nil); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("approving again: %v", err)
	}

	// Discarded: the host folder stays as it was.
	dir = project()
	task = run(dir, "[[folders discard]]")
	if after, err := h.unix.DecideWriteback(ctx, task.ID, false, nil); err != nil || after.Status != "completed" || !strings.Contains(summary(after), "discarded") {
		t.Fatalf("discard: %+v %v", after.Status, err)
	}
	for name, data := range map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != data {
			t.Errorf("%s = %q %v after a discard", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt reached the host after a discard: %v", err)
	}

	// Bad input: a folder that does not exist, a file, the helper's own
	// data folder. Nothing is queued.
	before, _ := h.unix.ListTasks(ctx, client.TaskQuery{})
	for _, bad := range []struct{ path, want string }{
		{filepath.Join(t.TempDir(), "missing"), "does not exist"},
		{filepath.Join(dir, "a.txt"), "is not a folder"},
		{home, "is the helper's data folder"},
		{"relative/path", "want an absolute path"},
	} {
		_, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "x", HostFolders: []string{bad.path}})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.path, err, bad.want)
		}
	}
	if now, _ := h.unix.ListTasks(ctx, client.TaskQuery{}); now.Total != before.Total {
		t.Errorf("bad input queued a task: %d then %d", before.Total, now.Total)
	}
}
