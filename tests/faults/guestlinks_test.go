package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestInputsAreNotWrittenThroughALinkedInbox answers the issue's "read,
// not tried" note in a real sandbox: code in the VM (a sealed template's,
// running before the task) replaces inbox with a link to a host folder,
// or leaves a link in an input's name. Giving the VM its inputs writes
// nothing through either: the copy fails saying why, or replaces the
// link with the input.
func TestInputsAreNotWrittenThroughALinkedInbox(t *testing.T) {
	m, c := startGuest(t, vm.NetworkOffline)
	victim := t.TempDir()
	src := filepath.Join(t.TempDir(), "brief.txt")
	os.WriteFile(src, []byte("the task's input"), 0o644)
	if r := guestSh(t, c, `cd "$HIVECREW_SHARED" && rm -rf inbox && ln -s `+victim+` inbox && ls -l`); r.ExitCode != 0 {
		t.Fatalf("the guest could not link inbox: %q", r.Stderr)
	}
	err := files.CopyIn(m.Spec().SharedDir(), []files.Input{{Name: "brief.txt", Path: src}})
	if err == nil || !strings.Contains(err.Error(), "inbox is a symbolic link") {
		t.Errorf("copying the inputs through a linked inbox: %v", err)
	}
	nothingIn(t, victim, "the host folder the guest linked inbox to")

	if r := guestSh(t, c, `cd "$HIVECREW_SHARED" && rm inbox && mkdir inbox && ln -s `+victim+`/brief.txt inbox/brief.txt`); r.ExitCode != 0 {
		t.Fatalf("the guest could not plant its link: %q", r.Stderr)
	}
	if err := files.CopyIn(m.Spec().SharedDir(), []files.Input{{Name: "brief.txt", Path: src}}); err != nil {
		t.Fatal(err)
	}
	nothingIn(t, victim, "the host folder the guest's link led to")
	if r := guestSh(t, c, `cat "$HIVECREW_SHARED/inbox/brief.txt"`); r.Stdout != "the task's input" {
		t.Errorf("the guest reads %q in its inbox", r.Stdout)
	}
}

// TestLinkedOutboxReadsNoHostFile: the guest replaces its outbox with a
// link to a host folder, and the helper stops under it (its outbox is kept
// for the fresh VM of its resume). Nothing of the host folder is kept: the
// resumed guest, which looks for it in its outbox, finds nothing, and no
// copy of it is left in the data folder or the output folder.
func TestLinkedOutboxReadsNoHostFile(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	secret := "host-secret-" + randHex(6)
	victim := t.TempDir()
	if err := os.WriteFile(filepath.Join(victim, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	const marker = "[[linked outbox]]"
	hold := make(chan struct{})
	defer close(hold)
	held := llmtest.Text("never")
	held.Hold = hold
	llm.Script(marker, append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": `cd "$HIVECREW_SHARED" && rm -rf outbox && ln -s ` + victim + ` outbox && echo linked`}),
		held,
		llmtest.Tool("run_shell", map[string]any{"command": `cat "$HIVECREW_SHARED/outbox/secret.txt"; ls -la "$HIVECREW_SHARED/outbox/"`}),
	}, llmtest.Done("Looked.")...)...)
	out := t.TempDir()
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Look around " + marker, OutputDirectory: out,
		ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); len(llm.Requests(marker)) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task never linked its outbox")
		}
	}
	h.term()

	h2 := startProcess(t, home, ids)
	h2.wait(task.ID, "held after the stop", 30*time.Second, func(t wire.Task) bool { return t.Status == "paused" })
	if _, err := h2.unix.TaskAction(context.Background(), task.ID, wire.TaskAction{Action: wire.ActionResume}); err != nil {
		t.Fatal(err)
	}
	done := h2.wait(task.ID, "the resumed task's end", 2*time.Minute, terminal)
	if done.Status != "completed" {
		t.Errorf("the resumed task ended %s: %q", done.Status, summary(done))
	}
	reqs := llm.Requests(marker)
	if len(reqs) < 4 || !strings.Contains(reqs[3], "secret.txt: No such file or directory") {
		t.Errorf("%d requests; want the resumed guest to find no secret.txt in its outbox", len(reqs))
	}
	for i, r := range reqs {
		if strings.Contains(r, secret) {
			t.Errorf("request %d carries the host file's contents", i+1)
		}
	}
	for _, dir := range []string{home, out} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, err := readData(p) // the VMs' disk images are sparse files of tens of GB
				if err != nil {
					t.Errorf("read %s: %v", p, err)
				}
				if strings.Contains(string(b), secret) {
					t.Errorf("%s holds the host file's contents", p)
				}
			}
			return nil
		})
	}
	h2.stop()
}
