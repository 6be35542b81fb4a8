package faults

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
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
	llm.Script(m, append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "workspace/login.txt", "contents": ""}),
		llmtest.Tool("open_file", map[string]any{"path": "workspace/login.txt", "app": "mousepad"}),
		llmtest.Tool("wait", map[string]any{"seconds": 2}),
		llmtest.Tool("use_credential", map[string]any{"name": "intranet", "field": "password"}),
		llmtest.Tool("keyboard_key", map[string]any{"key": "s", "modifiers": []string{"control"}}),
		llmtest.Tool("wait", map[string]any{"seconds": 1}),
		llmtest.Tool("run_shell", map[string]any{"command": "cat workspace/login.txt"}),
		llmtest.Tool("traverse_accessibility_tree", map[string]any{"app": "mousepad"}),
	}, llmtest.Done("Logged in.")...)...)
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Log in to the intranet " + m,
		ToolPolicy: map[string]string{"run_shell": "allow", "use_credential": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 2*time.Minute, terminal)
	h.ids.Note(done.VMID)
	if done.Status != "completed" {
		t.Fatalf("task %s %q", done.Status, summary(done))
	}
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

// noSecretKept fails the test when secret is in an export of the task or,
// once the helper is stopped, in any file under its data directory but
// the secret store.
func (h *helper) noSecretKept(taskID, secret string) {
	t := h.t
	t.Helper()
	for _, format := range []string{"json", "markdown", "html"} {
		var b bytes.Buffer
		if err := h.unix.Export(context.Background(), taskID, format, &b); err != nil || bytes.Contains(b.Bytes(), []byte(secret)) {
			t.Fatalf("export %s: holds the secret, or %v", format, err)
		}
	}
	h.stop()
	files := 0
	filepath.WalkDir(h.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(filepath.Base(path), "secret") {
			return nil
		}
		files++
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", path)
		}
		return nil
	})
	if files < 5 {
		t.Fatalf("searched only %d files", files)
	}
}
