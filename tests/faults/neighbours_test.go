package faults

import (
	"context"
	"errors"
	"io/fs"
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
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// nobody is the other local user of these tests.
const nobody = 65534

// asNobody runs a shell command as another local user, for real.
func asNobody(t *testing.T, cmd string) {
	t.Helper()
	sh := exec.Command("/bin/sh", "-c", cmd)
	sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("as nobody, %q: %v: %s", cmd, err, out)
	}
}

// neighbourhood makes a folder every local user may write in, as /tmp
// (mode 1777), and a folder of root's standing for /etc/cron.d: a place
// no output may reach.
func neighbourhood(t *testing.T) (shared, victim string) {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		os.Chmod(d, 0o755)
	}
	shared, victim = filepath.Join(base, "tmp"), filepath.Join(base, "cron.d")
	for _, d := range []string{shared, victim} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(shared, 0o777|fs.ModeSticky)
	return shared, victim
}

// nothingIn fails the test if dir holds anything.
func nothingIn(t *testing.T, dir, what string) {
	t.Helper()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("%s: %v %v; want it empty", what, ents, err)
	}
}

// TestOutputFolderCannotBeRedirected answers issue 34.2 with another
// local user's processes and real sandboxes. Before a task is submitted,
// nobody plants a link to a system folder where the user's output folder
// will be, or makes that folder: the submission is refused, saying why.
// Between the submission and the collection, nobody puts a link or a
// folder of theirs where a task's output folder is still to be made, and
// a link where the default output folder (Settings) is: the tasks end
// saying why their files were not saved, nothing lands in the link's
// target or in nobody's folder, nothing is given to nobody, and the files
// are kept with the tasks.
func TestOutputFolderCannotBeRedirected(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 3)
	ctx := context.Background()
	shared, victim := neighbourhood(t)

	asNobody(t, "ln -s "+victim+" "+shared+"/results && mkdir -m 777 "+shared+"/theirs")
	before, _ := h.unix.ListTasks(ctx, client.TaskQuery{})
	for dir, want := range map[string]string{
		shared + "/results":      "is a symbolic link made by another user (uid 65534)",
		shared + "/results/q3":   "is a symbolic link made by another user (uid 65534)",
		shared + "/theirs":       "belongs to another user (uid 65534)",
		shared + "/theirs/later": "belongs to another user (uid 65534)",
	} {
		_, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "x", OutputDirectory: dir})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("outputDirectory %s: %v; want a refusal saying %q", dir, err, want)
		}
	}
	if now, _ := h.unix.ListTasks(ctx, client.TaskQuery{}); now.Total != before.Total {
		t.Errorf("a refused task was queued: %d then %d", before.Total, now.Total)
	}

	// Collection time: three tasks held before their last turn.
	asNobody(t, "ln -s "+victim+" "+shared+"/Hivecrew")
	helperproc.Settings(t, h.unix, map[string]any{"outputDirectory": shared + "/Hivecrew"})
	release := make(chan struct{})
	tasks := map[string]string{} // marker: output folder ("" the default)
	for marker, dir := range map[string]string{"[[later link]]": shared + "/later-link", "[[later dir]]": shared + "/later-dir", "[[default]]": ""} {
		held := llmtest.Text("I am done.")
		held.Hold = release
		llm.Script(marker, llmtest.Tool("run_shell", map[string]any{"command": `echo 'the report' > "$HIVECREW_SHARED/outbox/report.txt"`}),
			held, llmtest.Verdict(true, "Wrote the report."))
		task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Write the report " + marker, OutputDirectory: dir,
			ToolPolicy: map[string]string{"run_shell": "allow"}})
		if err != nil {
			t.Fatal(err)
		}
		tasks[marker] = task.ID
	}
	deadline := time.Now().Add(2 * time.Minute)
	for marker := range tasks {
		for len(llm.Requests(marker)) < 2 {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("%s never reached its last turn", marker)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	asNobody(t, "ln -s "+victim+" "+shared+"/later-link && mkdir -m 777 "+shared+"/later-dir")
	close(release)
	for marker, want := range map[string]string{
		"[[later link]]": "later-link is a symbolic link made by another user (uid 65534)",
		"[[later dir]]":  "later-dir belongs to another user (uid 65534)",
		"[[default]]":    "Hivecrew is a symbolic link made by another user (uid 65534)",
	} {
		done := h.wait(tasks[marker], "the end of "+marker, 2*time.Minute, terminal)
		s := summary(done)
		if done.Status != "completed" || !strings.Contains(s, "1 of 1 output file(s) could not be saved") || !strings.Contains(s, want) {
			t.Errorf("%s ended %s: %q; want the file not saved because %q", marker, done.Status, s, want)
		}
		if len(done.OutputFiles) != 1 || done.OutputFiles[0].Name != "report.txt" || done.OutputFiles[0].SavedTo != "" {
			t.Errorf("%s: output files %+v; want report.txt kept with the task, saved nowhere", marker, done.OutputFiles)
		}
	}
	nothingIn(t, victim, "the links' target")
	nothingIn(t, shared+"/later-dir", "nobody's folder")
	nothingIn(t, shared+"/theirs", "nobody's folder made before")
	filepath.WalkDir(filepath.Dir(shared), func(p string, d fs.DirEntry, err error) error {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Sys().(*syscall.Stat_t).Uid == nobody {
			t.Errorf("%s was given to nobody", p)
		}
		return nil
	})
}

// TestDataFolderCannotBeGrantedThroughALink answers issue 34.5: the
// helper's Sessions/ (every task's outputs and traces) or its whole data
// folder, given as a host folder through a path whose parent is a
// symbolic link, is refused when the task is submitted, as the plain path
// is; nothing is queued and nothing is copied.
func TestDataFolderCannotBeGrantedThroughALink(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(filepath.Dir(home), alias); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(alias, filepath.Base(home))
	before, _ := h.unix.ListTasks(ctx, client.TaskQuery{})
	for _, p := range []string{via + "/Sessions", via, via + "/VMs", filepath.Join(home, "Sessions"), home, filepath.Dir(home)} {
		_, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Read the traces", HostFolders: []string{p}})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "the helper's data folder") {
			t.Errorf("host folder %s: %v; want it refused as the helper's data folder", p, err)
		}
	}
	if now, _ := h.unix.ListTasks(ctx, client.TaskQuery{}); now.Total != before.Total {
		t.Errorf("a refused task was queued: %d then %d", before.Total, now.Total)
	}
}
