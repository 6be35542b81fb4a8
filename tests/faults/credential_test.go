package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"golang.org/x/sys/unix"
)

// TestCredentialReachesTheFieldAndNothingElse (issue 19.1), with a real
// helper and sandbox. The threat: a secret the agent types is exfiltrated
// through what the host keeps or sends (the model's prompts, events, the
// trace, exports, logs), or echoed back by the guest to the model. The
// agent types a stored password into a text editor and saves it; the
// guest's own `cat` of the file shows the model a placeholder, which
// proves the field held exactly the secret; then every byte the helper
// wrote (except the secret store, whose job it is) and every request to
// the model is searched for it.
func TestCredentialReachesTheFieldAndNothingElse(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	const secret = "Tr0ub4dor&3-correct-horse"
	if _, err := h.unix.AddCredential(context.Background(), wire.CredentialInput{Name: "intranet", Username: "alice", Password: secret}); err != nil {
		t.Fatal(err)
	}
	const m = "[[log in]]"
	llm.Script(m, append(typeIntoFile("intranet"),
		append([]llmtest.Turn{
			llmtest.Tool("run_shell", map[string]any{"command": "cat workspace/login.txt"}),
			llmtest.Tool("traverse_accessibility_tree", map[string]any{"app": "mousepad"}),
		}, llmtest.Done("Logged in.")...)...)...)
	task := h.completesWithCredentials("Log in to the intranet " + m)
	reqs := llm.Requests(m)
	shown := false
	for _, r := range reqs {
		shown = shown || strings.Contains(r, `\"stdout\":\"[secret: intranet password]`)
	}
	if !shown {
		last := reqs[len(reqs)-2]
		i := strings.Index(last, "stdout")
		t.Fatalf("the guest's copy of the field is not the secret, or is not redacted: %.300s", last[max(0, i-100):])
	}
	for i, r := range reqs {
		if strings.Contains(r, secret) {
			t.Fatalf("request %d to the model carries the secret", i)
		}
	}
	act, err := h.unix.Activity(context.Background(), task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range act.Events {
		if strings.Contains(e.Data.Summary+e.Data.Details+e.Data.Reasoning, secret) {
			t.Fatalf("event %d carries the secret", e.Seq)
		}
	}
	h.noSecretKept(task.ID, secret)
}

// completesWithCredentials runs a task that may use the shell and the
// credentials without asking to its end, which must be completed.
func (h *helper) completesWithCredentials(description string) wire.Task {
	t := h.t
	t.Helper()
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: description,
		ToolPolicy: map[string]string{"run_shell": "allow", "use_credential": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 3*time.Minute, terminal)
	h.ids.Note(done.VMID)
	if done.Status != "completed" {
		t.Fatalf("task %s %q", done.Status, summary(done))
	}
	return done
}

// typeIntoFile are the agent's steps that type the password of the
// credential name into workspace/login.txt in a text editor, and save it:
// the guest then holds the secret, as one that captured it would.
func typeIntoFile(name string) []llmtest.Turn {
	return []llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "workspace/login.txt", "contents": ""}),
		llmtest.Tool("open_file", map[string]any{"path": "workspace/login.txt", "app": "mousepad"}),
		llmtest.Tool("wait", map[string]any{"seconds": 2}),
		llmtest.Tool("use_credential", map[string]any{"name": name, "field": "password"}),
		llmtest.Tool("keyboard_key", map[string]any{"key": "s", "modifiers": []string{"control"}}),
		llmtest.Tool("wait", map[string]any{"seconds": 1}),
	}
}

// noSecretKept fails the test when one of forms (a secret, its
// spellings) is in an export of the task, in what `hivecrew logs` prints
// of it or, once the helper is stopped, in any file under its data
// directory (the database among them) but the secret store.
func (h *helper) noSecretKept(taskID string, forms ...string) {
	t := h.t
	t.Helper()
	holds := func(b []byte) (string, bool) {
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				return f, true
			}
		}
		return "", false
	}
	for _, format := range []string{"json", "markdown", "html"} {
		var b bytes.Buffer
		if err := h.unix.Export(context.Background(), taskID, format, &b); err != nil {
			t.Fatalf("export %s: %v", format, err)
		}
		if f, ok := holds(b.Bytes()); ok {
			t.Fatalf("export %s holds %q", format, f)
		}
	}
	for _, args := range [][]string{{"logs", taskID}, {"logs", "--json", taskID}} {
		cmd := exec.Command(filepath.Join(bin, "hivecrew"), append([]string{"--home", h.home}, args...)...)
		out, err := cmd.Output()
		if err != nil || len(out) == 0 {
			t.Fatalf("hivecrew %s: %v", strings.Join(args, " "), err)
		}
		if f, ok := holds(out); ok {
			t.Fatalf("hivecrew %s prints %q", strings.Join(args, " "), f)
		}
	}
	h.stop()
	files := 0
	filepath.WalkDir(h.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(filepath.Base(path), "secret") {
			return nil
		}
		files++
		b, err := readData(path)
		if err != nil {
			t.Errorf("read %s: %v", path, err)
			return nil
		}
		if f, ok := holds(b); ok {
			t.Errorf("%s holds %q", path, f)
		}
		return nil
	})
	if files < 5 {
		t.Fatalf("searched only %d files", files)
	}
}

// maxScanned bounds what readData returns of one file.
const maxScanned = 256 << 20

// readData returns what a file holds, its holes left out: the VMs' disk
// images (Disks/, each VM's disk.img) are sparse files of tens of GB with
// a few hundred KB written, which are read whole here, not their size of
// zeros. A file with more than maxScanned bytes of data is an error,
// never read in part.
func readData(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var out []byte
	for off := int64(0); off < fi.Size(); {
		start, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole after off
		}
		if err != nil {
			return nil, fmt.Errorf("find data: %w", err)
		}
		end, err := unix.Seek(int(f.Fd()), start, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("find a hole: %w", err)
		}
		if int64(len(out))+end-start > maxScanned {
			return nil, fmt.Errorf("over %d MB of data: too much to search here", maxScanned>>20)
		}
		chunk := make([]byte, end-start)
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		out = append(out, chunk...)
		off = end
	}
	return out, nil
}
