package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// maxExtraInstructions bounds what a launch adds to a preset's description.
const maxExtraInstructions = 8 << 10

// checkPreset validates a preset's task as POST /tasks would, so a preset
// that saves is one that launches (until a provider or template it names
// is removed: launching checks again). Fields that name one past task are
// refused: a preset is launched many times.
func (o *Orchestrator) checkPreset(ctx context.Context, in wire.CreateTask) error {
	if in.ContinuationSourceTaskID != "" || len(in.ReferencedTaskIDs) > 0 {
		return errdefs.Invalidf("task: a preset cannot continue or reference a past task (continuationSourceTaskId, referencedTaskIds)")
	}
	if _, err := o.Check(ctx, in); err != nil {
		return fmt.Errorf("task: %w", err)
	}
	if _, err := checkHooks(in); err != nil {
		return fmt.Errorf("task: %w", err)
	}
	return nil
}

// CreatePreset saves a preset from a task configuration and uploaded files
// (moved into the preset's folder), or, with fromTask set, from that task's
// configuration and input files (copied).
func (o *Orchestrator) CreatePreset(ctx context.Context, in wire.SavePreset, uploads []Upload) (store.Preset, error) {
	p := store.Preset{ID: uuid.NewString(), Name: in.Name}
	var srcs []inputSource
	switch {
	case in.FromTaskID != "" && in.Task != nil:
		return p, errdefs.Invalidf("give task or fromTaskId, not both")
	case in.FromTaskID != "":
		task, inputs, err := o.presetOfTask(ctx, in.FromTaskID)
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
	if err := o.checkPreset(ctx, p.Task); err != nil {
		return p, err
	}
	for _, u := range uploads {
		srcs = append(srcs, inputSource{name: u.Name, path: u.Path})
	}
	rows, err := o.stagePresetFiles(p.ID, srcs, in.FromTaskID == "")
	if err != nil {
		return p, err
	}
	if err := o.cfg.Store.CreatePreset(ctx, &p, rows); err != nil {
		os.RemoveAll(filepath.Join(o.cfg.Paths.Presets(), p.ID))
		return p, err
	}
	return p, nil
}

// UpdatePreset renames a preset or replaces its task configuration (its
// input files stay).
func (o *Orchestrator) UpdatePreset(ctx context.Context, idOrName string, in wire.SavePreset) (store.Preset, error) {
	if in.FromTaskID != "" {
		return store.Preset{}, errdefs.Invalidf("fromTaskId: a preset is made from a task when it is created; give task to change it")
	}
	if in.Task != nil {
		if err := o.checkPreset(ctx, *in.Task); err != nil {
			return store.Preset{}, err
		}
	}
	p, err := o.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return p, err
	}
	return o.cfg.Store.UpdatePreset(ctx, p.ID, func(p *store.Preset) error {
		if in.Name != "" {
			p.Name = in.Name
		}
		if in.Task != nil {
			p.Task = *in.Task
		}
		return nil
	})
}

// DeletePreset deletes a preset and its files; tasks it launched stay.
func (o *Orchestrator) DeletePreset(ctx context.Context, idOrName string) error {
	p, err := o.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return err
	}
	if err := o.cfg.Store.DeletePreset(ctx, p.ID); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(o.cfg.Paths.Presets(), p.ID)); err != nil {
		o.cfg.Log.Warn("remove a deleted preset's files", "preset", p.ID, "err", err)
	}
	return nil
}

// LaunchPreset queues a task from a preset: its configuration checked
// afresh, its input files copied, extra instructions (if any) added after
// its description. The task is titled with the preset's name.
func (o *Orchestrator) LaunchPreset(ctx context.Context, idOrName string, run wire.RunPreset) (store.Task, error) {
	p, err := o.cfg.Store.FindPreset(ctx, idOrName)
	if err != nil {
		return store.Task{}, err
	}
	in := p.Task
	extra := strings.TrimSpace(run.ExtraInstructions)
	if len(extra) > maxExtraInstructions {
		return store.Task{}, errdefs.Invalidf("extraInstructions is %d bytes, over the limit of %d", len(extra), maxExtraInstructions)
	}
	if extra != "" {
		in.Description = strings.TrimSpace(in.Description) + "\n\n" + extra
	}
	t, err := o.Check(ctx, in)
	if err != nil {
		return store.Task{}, fmt.Errorf("preset %q: %w", p.Name, err)
	}
	t.Title = p.Name
	h, err := checkHooks(in)
	if err != nil {
		return store.Task{}, fmt.Errorf("preset %q: %w", p.Name, err)
	}
	pfiles, err := o.cfg.Store.PresetFiles(ctx, p.ID)
	if err != nil {
		return store.Task{}, err
	}
	srcs := make([]inputSource, len(pfiles))
	for i, f := range pfiles {
		srcs[i] = inputSource{name: f.Name, path: filepath.Join(o.cfg.Paths.Home, f.Path), mime: f.MimeType}
	}
	inputs, err := o.stageInputs(t.ID, srcs, false)
	if err != nil {
		return store.Task{}, err
	}
	if err := o.writeHooks(t.ID, h); err != nil {
		os.RemoveAll(o.taskDir(t.ID))
		return store.Task{}, err
	}
	if err := o.cfg.Store.LaunchPreset(ctx, p.ID, &t, inputs); err != nil {
		os.RemoveAll(o.taskDir(t.ID))
		return store.Task{}, err
	}
	o.cfg.Log.Info("preset launched", "preset", p.ID, "task", t.ID)
	o.hub.notify(t.ID)
	o.Kick()
	return t, nil
}

// presetOfTask is a task's configuration as a preset keeps it, and its
// input files.
func (o *Orchestrator) presetOfTask(ctx context.Context, id string) (wire.CreateTask, []inputSource, error) {
	cfg, err := o.TaskConfig(ctx, id)
	if err != nil {
		return wire.CreateTask{}, nil, fmt.Errorf("fromTaskId: %w", err)
	}
	in, err := o.cfg.Store.TaskFiles(ctx, id, store.FileInput)
	if err != nil {
		return wire.CreateTask{}, nil, err
	}
	srcs := make([]inputSource, len(in))
	for i, f := range in {
		srcs[i] = inputSource{name: f.Name, path: filepath.Join(o.cfg.Paths.Home, f.Path), mime: f.MimeType}
	}
	return cfg, srcs, nil
}

// TaskConfig is a task's configuration as POST /tasks takes it (without
// its files): what a preset made from it keeps, and what a rerun of it
// grants again.
func (o *Orchestrator) TaskConfig(ctx context.Context, id string) (wire.CreateTask, error) {
	t, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return wire.CreateTask{}, err
	}
	h, err := o.readHooks(id)
	if err != nil {
		return wire.CreateTask{}, err
	}
	folders := make([]string, len(t.HostFolders))
	for i, f := range t.HostFolders {
		folders[i] = f.Path
	}
	return wire.CreateTask{
		Description: t.Description, ProviderName: t.ProviderName, ModelID: t.ModelID, OutputDirectory: t.OutputDirectory,
		PlanFirst: t.PlanFirst, ReasoningEnabled: t.ReasoningEnabled, ReasoningEffort: t.ReasoningEffort, TemplateID: t.TemplateID,
		TimeoutMinutes: t.TimeoutMinutes, MaxIterations: t.MaxIterations, NetworkMode: t.NetworkMode, ToolPolicy: t.ToolPolicy,
		AllowHosts: t.AllowHosts, BudgetUSD: t.BudgetUSD, BudgetTokens: t.BudgetTokens, HostFolders: folders,
		Provisioning: TaskProvisioningJSON(t.Provisioning), SetupCommand: h.Setup, CheckCommand: h.Check,
		SwiftTaskFields: wire.SwiftTaskFields{MentionedSkillNames: t.SkillNames},
	}, nil
}

// stagePresetFiles puts a preset's input files into its folder (moving
// uploads, copying a task's inputs) and returns their rows.
func (o *Orchestrator) stagePresetFiles(id string, srcs []inputSource, move bool) ([]store.PresetFile, error) {
	dir := filepath.Join(o.cfg.Paths.Presets(), id)
	staged, err := o.putFiles(dir, dir, srcs, move)
	if err != nil {
		return nil, err
	}
	out := make([]store.PresetFile, len(staged))
	for i, f := range staged {
		out[i] = store.PresetFile{Name: f.name, Size: f.size, MimeType: f.mime, Path: f.path}
	}
	return out, nil
}
