package writeback

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/store"
)

// TestApprovedChangeReachesTheHost: a task's copy of a host folder is
// staged in its VM; the agent's change to it waits for review and does
// not touch the host; approved, it is written, the task gets back the
// status its agent ended with, and its watchers are told.
func TestApprovedChangeReachesTheHost(t *testing.T) {
	ctx := context.Background()
	home, hostDir, shared, session := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "notes.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	grants, err := Grants(home, []string{hostDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Grants(home, []string{filepath.Join(home, "Tasks")}); err == nil {
		t.Fatal("the data folder was granted as a host folder")
	}
	task := store.Task{ID: "t1", Description: "edit notes", ProviderName: "P", ModelID: "m", Status: store.StatusRunning, HostFolders: grants}
	if err := Stage(ctx, home, task, shared, session); err != nil {
		t.Fatal(err)
	}
	if p := Prompt(task); len(p) != 1 || !strings.Contains(p[0], "folders/"+grants[0].Name) {
		t.Fatalf("prompt %q", p)
	}
	copyPath := filepath.Join(shared, "folders", grants[0].Name, "notes.txt")
	if err := os.WriteFile(copyPath, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	items, events := Review(ctx, home, task, session, shared)
	if len(items) != 1 || Pending(items) != 1 || items[0].Path != "notes.txt" || len(events) != 1 || !strings.Contains(events[0].Summary, "wait for your review") {
		t.Fatalf("review: %+v, events %+v", items, events)
	}
	if b, _ := os.ReadFile(filepath.Join(hostDir, "notes.txt")); string(b) != "old" {
		t.Fatalf("the host file changed before the review: %q", b)
	}

	st, err := store.Open(ctx, filepath.Join(home, "hivecrew.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTask(ctx, &task, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.UpdateTask(ctx, task.ID, store.Update{Mutate: func(t *store.Task) error {
		t.Status, t.EndStatus = store.StatusWritebackReview, store.StatusCompleted
		return nil
	}, Writeback: items}); err != nil {
		t.Fatal(err)
	}
	var told []string
	r, err := New(Config{Store: st, Home: home, Notify: func(id string) { told = append(told, id) }})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Check(items[0]); c != "" {
		t.Fatalf("an unchanged host file reads as a conflict: %s", c)
	}
	done, err := r.Resolve(ctx, task.ID, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(hostDir, "notes.txt")); string(b) != "new" {
		t.Fatalf("the approved change was not written: %q", b)
	}
	if done.Status != store.StatusCompleted || done.ResultSummary == nil || !strings.Contains(*done.ResultSummary, "1 written to the host") || len(told) != 1 {
		t.Fatalf("after the review: %s, %v, told %v", done.Status, done.ResultSummary, told)
	}
}
