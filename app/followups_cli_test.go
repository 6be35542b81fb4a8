package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestFollowUpCommands: run --continue gives the new task the earlier
// one's outputs (by a short id, with a file of its own) and show says what
// it continues; rerun --model runs it again on another model, and an
// unknown --provider is refused in words; rename names a task, and the
// generated title does not come back.
func TestFollowUpCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := h.scripted("[[draft]]", append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "outbox/draft.md", "contents": "# Draft\n"})}, llmtest.Done("Wrote the draft.")...)...)
	llm.Title("Draft writing")
	a := h.runTask("Write a draft [[draft]]")
	h.waitStatus(a, "completed")
	waitFor(t, "the generated title", func() bool { return h.task(a).Title == "Draft writing" })

	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("be brief\n"), 0o644)
	llm.Script("[[edit]]", append([]llmtest.Turn{llmtest.Tool("read_file", map[string]any{"path": "inbox/draft.md"})}, llmtest.Done("Edited.")...)...)
	id := h.runTask("Edit the draft [[edit]]", "--continue", a[:8], "--file", notes)
	tb := h.waitStatus(id, "completed")
	if tb.ContinuationSourceTaskID != a || len(tb.InputFiles) != 2 {
		t.Fatalf("continues %q, want %s; inputs %+v", tb.ContinuationSourceTaskID, a, tb.InputFiles)
	}
	if reqs := llm.Requests("[[edit]]"); len(reqs) < 2 || !strings.Contains(reqs[0], "Wrote the draft.") || !strings.Contains(reqs[1], "# Draft") {
		t.Fatalf("the continuation's requests: %q", reqs)
	}
	if show := h.ok("show", id).stdout; !strings.Contains(show, "Continues") || !strings.Contains(show, a) {
		t.Fatalf("show:\n%s", show)
	}
	if r := h.cli("run", "x", "--continue", "nope"); r.code == 0 || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("continue an unknown task: %s", r)
	}

	r := h.ok("rerun", a, "--model", "scripted-mini")
	rid := strings.TrimSpace(r.stdout)
	if tr := h.waitStatus(rid, "completed"); tr.ModelID != "scripted-mini" || tr.RerunOf != a {
		t.Fatalf("rerun on %s of %s", tr.ModelID, tr.RerunOf)
	}
	last := llm.Requests("[[draft]]")
	if !strings.Contains(last[len(last)-1], `"model":"scripted-mini"`) {
		t.Fatalf("the rerun's last request: %.200s", last[len(last)-1])
	}
	if r := h.cli("rerun", a, "--provider", "Elsewhere"); r.code == 0 || !strings.Contains(r.stderr, `"Elsewhere": no such provider (configured: Scripted)`) {
		t.Fatalf("rerun on an unknown provider: %s", r)
	}

	if r := h.ok("rename", a, "The", "first", "draft"); !strings.Contains(r.stdout, a) {
		t.Fatalf("rename printed %q", r.stdout)
	}
	if ta := h.task(a); ta.Title != "The first draft" || !ta.TitleEdited {
		t.Fatalf("renamed %q (edited %v)", ta.Title, ta.TitleEdited)
	}
	if ls := h.ok("ls").stdout; !strings.Contains(ls, "The first draft") {
		t.Fatalf("ls:\n%s", ls)
	}
	if r := h.cli("rename", a); r.code != 2 || !strings.Contains(r.stderr, "rename needs a task and its new title") {
		t.Fatalf("rename without a title: %s", r)
	}
}
