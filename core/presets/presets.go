// Package presets keeps saved task configurations (presets) and launches
// tasks from them.
//
// It owns a preset's life: saving one from a configuration and uploaded
// files or from a past task (its configuration and input files copied),
// renaming it or replacing its configuration, deleting it with its files,
// and launching it (a task queued with its configuration, checked afresh,
// its input files copied, extra instructions added). It needs from its
// caller the presets' store (Store, which *store.Store satisfies), the
// task queue as Tasks (the checks POST /tasks makes, a past task's
// configuration, and staging and queueing a task: *orchestrator.Orchestrator
// is one, wired by the daemon), and the folders. It guarantees that a
// preset that saves is one that launches (until a provider or template it
// names is removed: launching checks again), that no preset names one
// past task (it is launched many times), and that a save or launch that
// fails leaves no file behind.
package presets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// MaxExtraInstructions bounds what a launch adds to a preset's
// description.
const MaxExtraInstructions = 8 << 10

// Store keeps presets and their files; *store.Store is one.
type Store interface {
	CreatePreset(ctx context.Context, p *store.Preset, files []store.PresetFile) error
	FindPreset(ctx context.Context, idOrName string) (store.Preset, error)
	PresetFiles(ctx context.Context, id string) ([]store.PresetFile, error)
	UpdatePreset(ctx context.Context, id string, mutate func(*store.Preset) error) (store.Preset, error)
	DeletePreset(ctx context.Context, id string) error
	// LaunchPreset stores the task a preset launched, with its inputs.
	LaunchPreset(ctx context.Context, id string, t *store.Task, inputs []store.TaskFile) error
	TaskFiles(ctx context.Context, taskID string, kind store.FileKind) ([]store.TaskFile, error)
}

// Tasks is the task queue as presets use it.
type Tasks interface {
	// Check validates a task's configuration as POST /tasks does and
	// returns the task to store.
	Check(ctx context.Context, in wire.CreateTask) (store.Task, error)
	// TaskConfig is a past task's configuration as POST /tasks takes it.
	TaskConfig(ctx context.Context, id string) (wire.CreateTask, error)
	// Stage puts a checked task's hooks and input files (copied) in its
	// folder and returns the inputs' rows; on error nothing is left.
	Stage(taskID string, h evalhooks.Hooks, srcs []files.Source) ([]store.TaskFile, error)
	// Discard removes the folder of a staged task that was not stored.
	Discard(taskID string)
	// Queued announces a task stored queued and wakes the dispatcher.
	Queued(taskID string)
}

// Config configures Presets; every field is required.
type Config struct {
	Store Store
	Tasks Tasks
	// Home is the data folder stored file paths are relative to; Dir
	// holds a folder of input files per preset.
	Home, Dir string
	Log       *slog.Logger
}

// Presets saves and launches presets. It is safe for concurrent use.
type Presets struct{ cfg Config }

// New returns the presets of cfg.
func New(cfg Config) (*Presets, error) {
	if cfg.Store == nil || cfg.Tasks == nil || cfg.Home == "" || cfg.Dir == "" || cfg.Log == nil {
		return nil, errors.New("presets: Store, Tasks, Home, Dir and Log are required")
	}
	return &Presets{cfg: cfg}, nil
}

// check validates a preset's task as POST /tasks would. Fields that name
// one past task are refused: a preset is launched many times.
func (ps *Presets) check(ctx context.Context, in wire.CreateTask) error {
	if in.ContinuationSourceTaskID != "" || len(in.ReferencedTaskIDs) > 0 {
		return errdefs.Invalidf("task: a preset cannot continue or reference a past task (continuationSourceTaskId, referencedTaskIds)")
	}
	if _, err := ps.cfg.Tasks.Check(ctx, in); err != nil {
		return fmt.Errorf("task: %w", err)
	}
	if _, err := evalhooks.Of(in); err != nil {
		return fmt.Errorf("task: %w", err)
	}
	return nil
}

// Create saves a preset from a task configuration and uploaded files
// (moved into the preset's folder), or, with fromTask set, from that task's
// configuration and input files (copied).
func (ps *Presets) Create(ctx context.Context, in wire.SavePreset, uploads []files.Source) (store.Preset, error) {
	p := store.Preset{ID: uuid.NewString(), Name: in.Name}
	var srcs []files.Source
	switch {
	case in.FromTaskID != "" && in.Task != nil:
		return p, errdefs.Invalidf("give task or fromTaskId, not both")
	case in.FromTaskID != "":
		task, inputs, err := ps.ofTask(ctx, in.FromTaskID)
		if err != nil {
			return p, err
		}
		p.Task, srcs = task, inputs
	case in.Task != nil:
		p.Task = *in.Task
	default:
		return p, errdefs.Invalidf("task is required: the configuration of the tasks the preset launches (or fromTaskId)")
	}
	if _, err := store.CheckPresetName(p.Name); err != nil {
		return p, err
	}
	if err := ps.check(ctx, p.Task); err != nil {
		return p, err
	}
	srcs = append(srcs, uploads...)
	rows, err := ps.stageFiles(p.ID, srcs, in.FromTaskID == "")
	if err != nil {
		return p, err
	}
	if err := ps.cfg.Store.CreatePreset(ctx, &p, rows); err != nil {
		os.RemoveAll(filepath.Join(ps.cfg.Dir, p.ID))
		return p, err
	}
	return p, nil
}

// Update renames a preset or replaces its task configuration (its input
// files stay).
func (ps *Presets) Update(ctx context.Context, idOrName string, in wire.SavePreset) (store.Preset, error) {
	if in.FromTaskID != "" {
		return store.Preset{}, errdefs.Invalidf("fromTaskId: a preset is made from a task when it is created; give task to change it")
	}
	if in.Task != nil {
		if err := ps.check(ctx, *in.Task); err != nil {
			return store.Preset{}, err
		}
	}
	p, err := ps.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return p, err
	}
	return ps.cfg.Store.UpdatePreset(ctx, p.ID, func(p *store.Preset) error {
		if in.Name != "" {
			p.Name = in.Name
		}
		if in.Task != nil {
			p.Task = *in.Task
		}
		return nil
	})
}

// Delete deletes a preset and its files; tasks it launched stay.
func (ps *Presets) Delete(ctx context.Context, idOrName string) error {
	p, err := ps.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return err
	}
	if err := ps.cfg.Store.DeletePreset(ctx, p.ID); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(ps.cfg.Dir, p.ID)); err != nil {
		ps.cfg.Log.Warn("remove a deleted preset's files", "preset", p.ID, "err", err)
	}
	return nil
}

// Launch queues a task from a preset: its configuration checked afresh,
// its input files copied, extra instructions (if any) added after its
// description. The task is titled with the preset's name.
func (ps *Presets) Launch(ctx context.Context, idOrName string, run wire.RunPreset) (store.Task, error) {
	p, err := ps.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return store.Task{}, err
	}
	in := p.Task
	extra := strings.TrimSpace(run.ExtraInstructions)
	if len(extra) > MaxExtraInstructions {
		return store.Task{}, errdefs.Invalidf("extraInstructions is %d bytes, over the limit of %d", len(extra), MaxExtraInstructions)
	}
	if extra != "" {
		in.Description = strings.TrimSpace(in.Description) + "\n\n" + extra
	}
	t, err := ps.cfg.Tasks.Check(ctx, in)
	if err != nil {
		return store.Task{}, fmt.Errorf("preset %q: %w", p.Name, err)
	}
	t.Title = p.Name
	h, err := evalhooks.Of(in)
	if err != nil {
		return store.Task{}, fmt.Errorf("preset %q: %w", p.Name, err)
	}
	pfiles, err := ps.cfg.Store.PresetFiles(ctx, p.ID)
	if err != nil {
		return store.Task{}, err
	}
	srcs := make([]files.Source, len(pfiles))
	for i, f := range pfiles {
		srcs[i] = files.Source{Name: f.Name, Path: filepath.Join(ps.cfg.Home, f.Path), Mime: f.MimeType}
	}
	inputs, err := ps.cfg.Tasks.Stage(t.ID, h, srcs)
	if err != nil {
		return store.Task{}, err
	}
	if err := ps.cfg.Store.LaunchPreset(ctx, p.ID, &t, inputs); err != nil {
		ps.cfg.Tasks.Discard(t.ID)
		return store.Task{}, err
	}
	ps.cfg.Log.Info("preset launched", "preset", p.ID, "task", t.ID)
	ps.cfg.Tasks.Queued(t.ID)
	return t, nil
}

// ofTask is a task's configuration as a preset keeps it, and its input
// files.
func (ps *Presets) ofTask(ctx context.Context, id string) (wire.CreateTask, []files.Source, error) {
	cfg, err := ps.cfg.Tasks.TaskConfig(ctx, id)
	if err != nil {
		return wire.CreateTask{}, nil, fmt.Errorf("fromTaskId: %w", err)
	}
	in, err := ps.cfg.Store.TaskFiles(ctx, id, store.FileInput)
	if err != nil {
		return wire.CreateTask{}, nil, err
	}
	srcs := make([]files.Source, len(in))
	for i, f := range in {
		srcs[i] = files.Source{Name: f.Name, Path: filepath.Join(ps.cfg.Home, f.Path), Mime: f.MimeType}
	}
	return cfg, srcs, nil
}

// stageFiles puts a preset's input files into its folder (moving uploads,
// copying a task's inputs) and returns their rows.
func (ps *Presets) stageFiles(id string, srcs []files.Source, move bool) ([]store.PresetFile, error) {
	dir := filepath.Join(ps.cfg.Dir, id)
	staged, err := files.Stage(ps.cfg.Home, dir, dir, srcs, move)
	if err != nil {
		return nil, err
	}
	out := make([]store.PresetFile, len(staged))
	for i, f := range staged {
		out[i] = store.PresetFile{Name: f.Name, Size: f.Size, MimeType: f.Mime, Path: f.Path}
	}
	return out, nil
}
