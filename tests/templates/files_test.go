package templates

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestOutboxEscapesAreNotCollected: a guest that plants outbox/x ->
// /etc/passwd (a symbolic link) and writes outbox/../../escape gets
// neither copied out, while its real outputs (and an attachment it read
// from inbox/) are collected, listed with the inputs by the files API and
// placed in the output directory; an output over the per-task size cap is
// left out and the task's summary says so.
func TestOutboxEscapesAreNotCollected(t *testing.T) {
	h := startHelper(t, newHome(t), "")
	h.Settings(t, map[string]any{"warmPoolSize": 0, "networkMode": "offline", "maxOutputTaskMB": 1})
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	ctx := context.Background()
	order := filepath.Join(t.TempDir(), "order.txt")
	os.WriteFile(order, []byte("3 apples\n"), 0o600)

	llm.Script("[[escape]]", append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": strings.Join([]string{
			"ln -s /etc/passwd outbox/x",
			"ln -s ../../.. outbox/up",
			"echo escaped > outbox/../../escape",
			"tr a-z A-Z < inbox/order.txt > outbox/receipt.txt",
			"mkdir -p outbox/sub && echo deep > outbox/sub/deep.txt",
			"head -c 700000 /dev/zero > outbox/big1.bin",
			"head -c 700000 /dev/zero > outbox/big2.bin",
			`ls -la outbox; echo PLANTED-"OK"`,
		}, " && ")}),
		llmtest.Tool("write_file", map[string]any{"path": "outbox/../../escape2", "contents": "escaped"}),
	}, llmtest.Done("Wrote the receipt.")...)...)
	task := h.task(t, p, "", "Process the order [[escape]]", order)
	done := h.WaitTask(t, task.ID, "the end", 2*time.Minute, ended)
	if done.Status != "completed" {
		t.Fatalf("task ended %s: %v", done.Status, *done.ResultSummary)
	}
	if !strings.Contains(told(llm, "[[escape]]"), "PLANTED-OK") {
		t.Fatalf("the guest did not plant its files: %s", tail(told(llm, "[[escape]]"), 2000))
	}
	// The guest agent refused write_file outside the shared folder.
	answer := regexp.MustCompile(`"role":"tool","content":"((?:[^"\\]|\\.)*)","tool_call_id":"call-write_file"`).FindStringSubmatch(told(llm, "[[escape]]"))
	if answer == nil || answer[1] == "Done." || !strings.Contains(strings.ToLower(answer[1]), "shared") {
		t.Errorf("write_file of outbox/../../escape2 was answered %q", answer)
	}

	files, err := h.Unix.TaskFiles(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ins, outs []string
	for _, f := range files.InputFiles {
		ins = append(ins, f.Name)
	}
	for _, f := range files.OutputFiles {
		outs = append(outs, f.Name)
	}
	slices.Sort(outs)
	// big1 and big2 (700 kB each) do not both fit in the 1 MB per-task cap:
	// one is collected (the walk's order), the other is not.
	if strings.Join(ins, ",") != "order.txt" || len(outs) != 3 || outs[0] != "big1.bin" || outs[1] != "receipt.txt" || outs[2] != "sub/deep.txt" {
		t.Fatalf("files API: inputs %v, outputs %v; want order.txt and big1.bin, receipt.txt, sub/deep.txt", ins, outs)
	}
	var got bytes.Buffer
	if err := h.Unix.Download(ctx, task.ID, "receipt.txt", "output", &got); err != nil || got.String() != "3 APPLES\n" {
		t.Errorf("receipt.txt: %q %v", got.String(), err)
	}
	outDir := done.OutputDirectory
	var placed []string
	filepath.WalkDir(outDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(outDir, p)
			placed = append(placed, rel)
		}
		return nil
	})
	slices.Sort(placed)
	if strings.Join(placed, ",") != "big1.bin,receipt.txt,sub/deep.txt" {
		t.Errorf("output directory holds %v", placed)
	}
	// Nothing of the escapes exists on the host side.
	for _, p := range []string{filepath.Join(outDir, "x"), filepath.Join(outDir, "up"), filepath.Join(filepath.Dir(outDir), "escape"), filepath.Join(h.Home, "escape"), filepath.Join(h.Home, "VMs", "escape")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	summary := *done.ResultSummary
	if !strings.HasPrefix(summary, "Wrote the receipt.") || !strings.Contains(summary, "Not collected, over the output size caps") || !strings.Contains(summary, "big2.bin (700000 bytes, over the") {
		t.Errorf("summary does not say what the cap left out: %q", summary)
	}
	act, err := h.Unix.Activity(ctx, task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range act.Events {
		if strings.HasSuffix(e.Data.Summary, "outbox entries not collected") {
			notes = append(notes, strings.Split(e.Data.Details, "\n")...)
		}
	}
	for _, want := range []string{"x (symbolic link", "up (symbolic link", "big2.bin ("} {
		if !slices.ContainsFunc(notes, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no skipped entry %q in %q", want, notes)
		}
	}
}

// TestTraceRetention: with traceRetentionDays set, the helper deletes at
// start the traces (session folder: events, screenshots, artifacts) of
// tasks that ended longer ago; the task stays in the history, marked as
// having no trace, with its activity text and inputs; a recent task keeps
// its trace. With 0 days nothing is deleted.
func TestTraceRetention(t *testing.T) {
	home := newHome(t)
	ctx := context.Background()
	h := startHelper(t, home, "")
	h.Settings(t, map[string]any{"warmPoolSize": 0, "networkMode": "offline"})
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	var tasks []wire.Task
	for _, m := range []string{"[[old]]", "[[new]]"} {
		llm.Script(m, append([]llmtest.Turn{
			llmtest.Tool("screenshot", map[string]any{}),
			llmtest.Tool("write_file", map[string]any{"path": "outbox/result.txt", "contents": "result " + m}),
		}, llmtest.Done("Done "+m)...)...)
		task := h.task(t, p, "", "Work "+m)
		if done := h.WaitTask(t, task.ID, "the end", 2*time.Minute, ended); done.Status != "completed" {
			t.Fatalf("task ended %s: %v", done.Status, *done.ResultSummary)
		}
		tasks = append(tasks, task)
	}
	sessions := map[string]string{}
	for _, task := range tasks {
		full, err := h.Unix.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		shots, _ := filepath.Glob(filepath.Join(home, "Sessions", "*", "screenshots", "*"))
		if len(shots) == 0 || full.TraceDeletedAt != nil {
			t.Fatalf("no screenshots recorded (%d) or trace marked deleted: %+v", len(shots), full)
		}
		st := openStore(t, home)
		stored, err := st.GetTask(ctx, task.ID)
		st.Close()
		if err != nil || stored.SessionID == "" {
			t.Fatalf("session of %s: %v", task.ID, err)
		}
		sessions[task.ID] = stored.SessionID
	}
	// Keep 0 days (the default): a restart deletes nothing.
	h.stop()
	db, err := gorm.Open(sqlite.Open(filepath.Join(home, "hivecrew.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour).UTC()
	if err := db.Exec("UPDATE tasks SET completed_at = ? WHERE id = ?", old, tasks[0].ID).Error; err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
	h = startHelper(t, home, "")
	if _, err := os.Stat(filepath.Join(home, "Sessions", sessions[tasks[0].ID])); err != nil {
		t.Fatalf("retention 0 deleted a trace: %v", err)
	}
	// Keep 30 days: the next start deletes the old task's trace only.
	h.Settings(t, map[string]any{"traceRetentionDays": 30})
	h.stop()
	h = startHelper(t, home, "")
	if _, err := os.Stat(filepath.Join(home, "Sessions", sessions[tasks[0].ID])); !os.IsNotExist(err) {
		t.Errorf("the 40-day-old trace is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "Sessions", sessions[tasks[1].ID], "events.jsonl")); err != nil {
		t.Errorf("the recent trace was deleted: %v", err)
	}
	gone, err := h.Unix.Task(ctx, tasks[0].ID)
	if err != nil {
		t.Fatalf("the old task left the history: %v", err)
	}
	if gone.TraceDeletedAt == nil || gone.Status != "completed" || !strings.Contains(*gone.ResultSummary, "Done [[old]]") {
		t.Errorf("old task after retention: %+v", gone)
	}
	if kept, _ := h.Unix.Task(ctx, tasks[1].ID); kept.TraceDeletedAt != nil {
		t.Errorf("the recent task is marked as having no trace")
	}
	act, err := h.Unix.Activity(ctx, tasks[0].ID, 0)
	if err != nil || len(act.Events) == 0 {
		t.Fatalf("the old task's activity log: %v (%d events)", err, len(act.Events))
	}
	var buf bytes.Buffer
	if err := h.Unix.Screenshot(ctx, tasks[0].ID, &buf); err == nil {
		t.Errorf("the old task still serves a screenshot (%d bytes)", buf.Len())
	}
	if err := h.Unix.Download(ctx, tasks[0].ID, "result.txt", "output", &buf); err == nil {
		t.Errorf("the old task still serves its artifact")
	}
}
