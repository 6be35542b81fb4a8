package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestPresets: a preset saved with a file and limits launches a task with
// the same file, limits and title, and the run's extra instructions reach
// the model; a task is saved as a preset with its inputs; names are
// unique without case; bad input is a clear error and leaves nothing.
func TestPresets(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := h.scripted("Write the weekly digest", llmtest.Done("Digest written.")...)
	llm.Script("Tidy the downloads", llmtest.Done("Tidied.")...)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("sales up 4%\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.ok("presets", "add", "Weekly digest", "Write the weekly digest from notes.txt.", "--file", notes, "--timeout", "12", "--max-iterations", "40")
	if want := "Saved preset \"Weekly digest\" with 1 input file. Launch it with: hivecrew presets run \"Weekly digest\"\n"; r.stdout != want {
		t.Fatalf("presets add: %s", r)
	}
	show := h.ok("presets", "show", "weekly DIGEST").stdout
	for _, want := range []string{"Task:", "Write the weekly digest from notes.txt.", "Limits:", "12 minutes, 40 steps", "notes.txt (12 B)", "Launched:  0 times"} {
		if !strings.Contains(show, want) {
			t.Fatalf("presets show lacks %q:\n%s", want, show)
		}
	}
	id := strings.TrimSpace(h.ok("presets", "run", "Weekly digest", "Focus on sales.").stdout)
	task := h.waitStatus(id, "completed")
	if task.Title != "Weekly digest" || task.TimeoutMinutes != 12 || task.MaxIterations != 40 ||
		len(task.InputFiles) != 1 || task.InputFiles[0].Name != "notes.txt" {
		t.Fatalf("the preset's task: %+v", task)
	}
	reqs := llm.Requests("Write the weekly digest")
	if len(reqs) == 0 || !strings.Contains(reqs[0], "Focus on sales.") {
		t.Fatalf("the run's instructions did not reach the model: %d requests", len(reqs))
	}
	var p wire.Preset
	decodeOne(t, h.ok("presets", "show", "--json", "Weekly digest").stdout, &p)
	if p.UseCount != 1 || p.LastUsedAt == nil || strings.Contains(p.Task.Description, "Focus on sales") {
		t.Fatalf("after a run the preset is %+v", p)
	}

	// A task is saved as a preset, with its inputs.
	h.ok("presets", "save", id[:8], "Digest again")
	decodeOne(t, h.ok("presets", "show", "--json", "Digest again").stdout, &p)
	if len(p.InputFiles) != 1 || !strings.Contains(p.Task.Description, "Focus on sales.") || p.Task.TimeoutMinutes != 12 {
		t.Fatalf("a preset saved from a task: %+v", p)
	}
	ls := h.ok("presets", "ls").stdout
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "Weekly digest") || !strings.HasPrefix(lines[2], "Digest again") {
		t.Fatalf("presets ls (the used one first):\n%s", ls)
	}
	h.ok("presets", "rename", "Digest again", "Tidy")
	h.ok("presets", "rm", "Tidy")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"presets", "add", "weekly digest", "Another."}, `a preset named "weekly digest" exists already`},
		{[]string{"presets", "add", "  ", "Something."}, "name is required"},
		{[]string{"presets", "add", "Long", "Tidy the downloads.", "--template", "no-such-template"}, `task: template "no-such-template": no such template`},
		{[]string{"presets", "add", "Nope", "Tidy the downloads.", "--provider", "Nobody"}, `task: provider "Nobody": no such provider`},
		{[]string{"presets", "run", "No such preset"}, `no preset "No such preset"`},
		{[]string{"presets", "save", "00000000", "From nothing"}, "no task with id 00000000"},
		{[]string{"presets", "rename", "Weekly digest", " "}, "the new name is required"},
	} {
		if r := h.cli(bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%q: want an error with %q, got %s", bad.args, bad.want, r)
		}
	}
	// Nothing was left of the refused ones.
	ls = h.ok("presets", "ls").stdout
	if lines := strings.Split(strings.TrimSpace(ls), "\n"); len(lines) != 2 {
		t.Fatalf("after refusals:\n%s", ls)
	}
	entries, err := os.ReadDir(filepath.Join(h.home, "Presets"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("preset folders: %v %v (want the one with notes.txt)", entries, err)
	}
}
