package presets

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// tasks is the queue as presets see it: it checks nothing but the
// description, and records what it is given.
type tasks struct {
	staged map[string][]files.Source
	hooks  map[string]evalhooks.Hooks
	queued []string
}

func (q *tasks) Check(_ context.Context, in wire.CreateTask) (store.Task, error) {
	if in.Description == "" {
		return store.Task{}, errdefs.Invalidf("description is required")
	}
	return store.Task{ID: uuid.NewString(), Description: in.Description, ProviderName: "P", ModelID: "m"}, nil
}

func (q *tasks) TaskConfig(context.Context, string) (wire.CreateTask, error) {
	return wire.CreateTask{}, errdefs.NotFoundf("no such task")
}

func (q *tasks) Stage(id string, h evalhooks.Hooks, srcs []files.Source) ([]store.TaskFile, error) {
	q.staged[id], q.hooks[id] = srcs, h
	return nil, nil
}

func (q *tasks) Discard(string)   {}
func (q *tasks) Queued(id string) { q.queued = append(q.queued, id) }

// TestPresetSavesAndLaunches: a preset keeps its uploaded file in its
// folder; a launch queues a task titled as the preset, its description
// followed by the extra instructions, given the preset's file (copied)
// and its check command; deleting it removes its folder.
func TestPresetSavesAndLaunches(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	st, err := store.Open(ctx, filepath.Join(home, "hivecrew.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := &tasks{staged: map[string][]files.Source{}, hooks: map[string]evalhooks.Hooks{}}
	ps, err := New(Config{Store: st, Tasks: q, Home: home, Dir: filepath.Join(home, "Presets"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(t.TempDir(), "upload")
	if err := os.WriteFile(up, []byte("q1 numbers"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ps.Create(ctx, wire.SavePreset{Name: "Weekly", Task: &wire.CreateTask{Description: "Sum the sheet", CheckCommand: "test -s /out/sum"}},
		[]files.Source{{Name: "sheet.csv", Path: up}})
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(home, "Presets", p.ID, "sheet.csv")
	if b, err := os.ReadFile(kept); err != nil || string(b) != "q1 numbers" {
		t.Fatalf("preset's file: %q, %v", b, err)
	}
	if _, err := os.Stat(up); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the upload was copied, not moved: %v", err)
	}
	task, err := ps.Launch(ctx, "Weekly", wire.RunPreset{ExtraInstructions: "Round to cents."})
	if err != nil {
		t.Fatal(err)
	}
	if task.Title != "Weekly" || task.Description != "Sum the sheet\n\nRound to cents." || len(q.queued) != 1 || q.queued[0] != task.ID {
		t.Fatalf("launched %q %q, queued %v", task.Title, task.Description, q.queued)
	}
	if srcs := q.staged[task.ID]; len(srcs) != 1 || srcs[0].Name != "sheet.csv" || srcs[0].Path != kept || q.hooks[task.ID].Check != "test -s /out/sum" {
		t.Fatalf("staged %+v with hooks %+v", srcs, q.hooks[task.ID])
	}
	if stored, err := st.GetTask(ctx, task.ID); err != nil || stored.Status != store.StatusQueued {
		t.Fatalf("stored task: %+v, %v", stored, err)
	}
	if _, err := ps.Launch(ctx, "Weekly", wire.RunPreset{ExtraInstructions: strings.Repeat("x", MaxExtraInstructions+1)}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("oversized extra instructions: %v; want invalid", err)
	}
	chain := wire.CreateTask{Description: "go on"}
	chain.ContinuationSourceTaskID = task.ID
	if _, err := ps.Create(ctx, wire.SavePreset{Name: "Chain", Task: &chain}, nil); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a preset continuing one task: %v; want invalid", err)
	}
	if err := ps.Delete(ctx, "Weekly"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(kept)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a deleted preset's folder is left: %v", err)
	}
}
