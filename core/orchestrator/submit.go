package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/continuation"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/evalhooks"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/core/writeback"
)

// Limits of a task's configuration (wire's, which other checks of the
// same input share).
const (
	maxDescription    = wire.MaxTaskDescription
	maxTimeoutMinutes = wire.MaxTaskTimeoutMinutes
	maxIterationsCap  = wire.MaxTaskIterations
)

// taskDir is where a task's input files live.
func (o *Orchestrator) taskDir(id string) string { return filepath.Join(o.cfg.Paths.Tasks(), id) }

// Check validates a new task's configuration, fills in the provider's name
// and default model, and returns the task to store. Every problem is an
// error of class invalid that names the field.
func (o *Orchestrator) Check(ctx context.Context, in wire.CreateTask) (store.Task, error) {
	var t store.Task
	desc := strings.TrimSpace(in.Description)
	switch {
	case desc == "":
		return t, errdefs.Invalidf("description is required")
	case len(desc) > maxDescription:
		return t, errdefs.Invalidf("description is %d bytes, over the limit of %d", len(desc), maxDescription)
	}
	providers, err := o.cfg.Store.ListProviders(ctx)
	if err != nil {
		return t, err
	}
	if len(providers) == 0 {
		return t, errdefs.Invalidf("no LLM provider is configured: add one with `hivecrew providers add --name NAME --base-url URL --api-key KEY` (or in Settings)")
	}
	p, err := o.cfg.Store.FindProvider(ctx, in.ProviderName)
	if errors.Is(err, errdefs.ErrNotFound) {
		return t, errdefs.NotFoundf("providerName %q: no such provider (configured: %s)", in.ProviderName, providerNames(providers))
	}
	if err != nil {
		return t, err
	}
	model := or(in.ModelID, p.DefaultModelID)
	if model == "" {
		return t, errdefs.Invalidf("modelId is required: provider %s has no default model", p.DisplayName)
	}
	if in.TimeoutMinutes < 0 || in.TimeoutMinutes > maxTimeoutMinutes {
		return t, errdefs.Invalidf("timeoutMinutes %d: want 1..%d (or 0 for the default)", in.TimeoutMinutes, maxTimeoutMinutes)
	}
	if in.MaxIterations < 0 || in.MaxIterations > maxIterationsCap {
		return t, errdefs.Invalidf("maxIterations %d: want 1..%d (or 0 for the default)", in.MaxIterations, maxIterationsCap)
	}
	if in.NetworkMode != "" && !config.NetworkMode(in.NetworkMode).Valid() {
		return t, errdefs.Invalidf("networkMode %q: want internet or offline", in.NetworkMode)
	}
	if err := toPolicy(in.ToolPolicy).Validate(); err != nil {
		return t, errdefs.Invalidf("toolPolicy: %v", err)
	}
	if err := checkBudget(in.BudgetUSD, in.BudgetTokens); err != nil {
		return t, err
	}
	if err := config.CheckAllowHosts(in.AllowHosts); err != nil {
		return t, errdefs.Invalidf("allowHosts: %v", err)
	}
	if err := CheckReasoningEffort(in.ReasoningEffort); err != nil {
		return t, err
	}
	switch in.Priority {
	case "", "low", "normal", "high":
	default:
		return t, errdefs.Invalidf("priority %q: want low, normal or high", in.Priority)
	}
	out, err := o.outputDir(in.OutputDirectory)
	if err != nil {
		return t, err
	}
	skillNames, err := skillNames(in.MentionedSkillNames)
	if err != nil {
		return t, err
	}
	folders, err := writeback.Grants(o.cfg.Paths.Home, in.HostFolders)
	if err != nil {
		return t, err
	}
	prov, err := taskProvisioning(in.Provisioning, in.SetupCommand)
	if err != nil {
		return t, err
	}
	if in.TemplateID != "" {
		tmpl, err := o.cfg.Store.GetTemplate(ctx, in.TemplateID)
		if errors.Is(err, errdefs.ErrNotFound) {
			return t, errdefs.Invalidf("templateId %q: no such template (%s)", in.TemplateID, o.templateNames(ctx))
		} else if err != nil {
			return t, err
		}
		if err := usable(tmpl); err != nil {
			return t, err
		}
	}
	return store.Task{
		ID: uuid.NewString(), Description: desc, ProviderName: p.DisplayName, ModelID: model,
		OutputDirectory: out, PlanFirst: in.PlanFirst, TemplateID: in.TemplateID, TimeoutMinutes: in.TimeoutMinutes,
		MaxIterations: in.MaxIterations, NetworkMode: in.NetworkMode, ToolPolicy: in.ToolPolicy,
		AllowHosts: in.AllowHosts, ReasoningEnabled: in.ReasoningEnabled, ReasoningEffort: in.ReasoningEffort,
		BudgetUSD: in.BudgetUSD, BudgetTokens: in.BudgetTokens, SkillNames: skillNames, HostFolders: folders, Provisioning: prov,
	}, nil
}

// providerNames lists providers' names for a message.
func providerNames(providers []store.Provider) string {
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.DisplayName
	}
	return strings.Join(names, ", ")
}

// checkBudget refuses a negative budget (0 means none).
func checkBudget(usd *float64, tokens *int64) error {
	if usd != nil && (*usd < 0 || *usd > 1e6) {
		return errdefs.Invalidf("budgetUSD %g: want 0 (none) to 1000000", *usd)
	}
	if tokens != nil && *tokens < 0 {
		return errdefs.Invalidf("budgetTokens %d: want 0 (none) or more", *tokens)
	}
	return nil
}

// ReasoningEfforts are the reasoning_effort values providers take.
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// CheckReasoningEffort refuses an effort no provider knows ("" is the
// provider's default).
func CheckReasoningEffort(effort string) error {
	if effort == "" || slices.Contains(ReasoningEfforts, effort) {
		return nil
	}
	return errdefs.Invalidf("reasoningEffort %q: want one of %s", effort, strings.Join(ReasoningEfforts, ", "))
}

// OutputDir is the folder a task's outputDirectory names, as a task
// keeps it: ~/ expanded and checked, as its real path ("" for Settings'
// folder).
func (o *Orchestrator) OutputDir(dir string) (string, error) { return o.outputDir(dir) }

// outputDir checks an output directory (absolute, or starting with ~/)
// and returns its real path (files.CheckOutputFolder).
func (o *Orchestrator) outputDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errdefs.Invalidf("outputDirectory %q: no home directory to expand ~ in", dir)
		}
		dir = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(dir) {
		return "", errdefs.Invalidf("outputDirectory %q: want an absolute path", dir)
	}
	fence, err := writeback.Fence(o.cfg.Paths.Home)
	if err != nil {
		return "", err
	}
	return files.CheckOutputFolder(filepath.Clean(dir), hostpath.Self(), fence)
}

// Submit checks and queues a new task with its uploaded input files. The
// uploads' temporary files are moved; on error they are left to the caller.
func (o *Orchestrator) Submit(ctx context.Context, in wire.CreateTask, uploads []files.Source) (store.Task, error) {
	t, err := o.Check(ctx, in)
	if err != nil {
		return store.Task{}, err
	}
	h, err := evalhooks.Of(in)
	if err != nil {
		return store.Task{}, err
	}
	cont, err := continuation.Of(ctx, o.cfg.Store, o.cfg.Paths.Home, in.ContinuationSourceTaskID)
	if err != nil {
		return store.Task{}, err
	}
	srcs := cont.Apply(&t, uploads)
	if err := o.writeHooks(t.ID, h); err != nil {
		return store.Task{}, err
	}
	t, err = o.queue(ctx, t, srcs, true)
	if err == nil {
		o.titleLater(t)
	}
	return t, err
}

// queue stores a checked task and its inputs and wakes the dispatcher.
func (o *Orchestrator) queue(ctx context.Context, t store.Task, srcs []files.Source, move bool) (store.Task, error) {
	inputs, err := o.stageInputs(t.ID, srcs, move)
	if err != nil {
		return store.Task{}, err
	}
	if err := o.cfg.Store.CreateTask(ctx, &t, inputs); err != nil {
		os.RemoveAll(o.taskDir(t.ID))
		return store.Task{}, err
	}
	o.hub.notify(t.ID)
	o.Kick()
	return t, nil
}

// Stage puts a checked task's hooks and input files (copied) in its
// folder and returns the inputs' rows; on error nothing is left. With
// Discard and Queued it is how a feature that makes tasks of its own
// (core/presets, core/scheduler) queues them.
func (o *Orchestrator) Stage(taskID string, h evalhooks.Hooks, srcs []files.Source) ([]store.TaskFile, error) {
	inputs, err := o.stageInputs(taskID, srcs, false)
	if err != nil {
		return nil, err
	}
	if err := o.writeHooks(taskID, h); err != nil {
		o.Discard(taskID)
		return nil, err
	}
	return inputs, nil
}

// Discard removes the folder of a staged task that was not stored.
func (o *Orchestrator) Discard(taskID string) { os.RemoveAll(o.taskDir(taskID)) }

// Queued announces a task stored queued to its watchers and wakes the
// dispatcher.
func (o *Orchestrator) Queued(taskID string) {
	o.hub.notify(taskID)
	o.Kick()
}

// stageInputs puts input files into the task's folder (moving or copying
// them) and returns their rows.
func (o *Orchestrator) stageInputs(taskID string, srcs []files.Source, move bool) ([]store.TaskFile, error) {
	staged, err := files.Stage(o.cfg.Paths.Home, filepath.Join(o.taskDir(taskID), "inputs"), o.taskDir(taskID), srcs, move)
	if err != nil {
		return nil, err
	}
	out := make([]store.TaskFile, len(staged))
	for i, f := range staged {
		out[i] = store.TaskFile{Name: f.Name, Size: f.Size, MimeType: f.Mime, Path: f.Path}
	}
	return out, nil
}

// RerunWith overrides a rerun's provider and model (empty: the old task's;
// a provider alone takes its default model).
type RerunWith struct {
	ProviderName string
	ModelID      string
}

// Rerun queues a new task with a finished task's configuration and inputs,
// on another provider or model if with says so. A continuation's rerun
// continues the same task (its inputs already hold the earlier outputs).
func (o *Orchestrator) Rerun(ctx context.Context, id string, with RerunWith) (store.Task, error) {
	old, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return store.Task{}, err
	}
	if !old.Status.Terminal() {
		return store.Task{}, errdefs.Conflictf("task %s is %s: only a finished task can be rerun", id, old.Status)
	}
	provider, model, err := o.rerunModel(ctx, old, with)
	if err != nil {
		return store.Task{}, err
	}
	in, err := o.cfg.Store.TaskFiles(ctx, id, store.FileInput)
	if err != nil {
		return store.Task{}, err
	}
	srcs := make([]files.Source, len(in))
	for i, f := range in {
		srcs[i] = files.Source{Name: f.Name, Path: filepath.Join(o.cfg.Paths.Home, f.Path), Mime: f.MimeType}
	}
	oldID := old.ID
	t := store.Task{
		ID: uuid.NewString(), Title: old.Title, TitleEdited: old.TitleEdited, Description: old.Description,
		ProviderName: provider, ModelID: model,
		OutputDirectory: old.OutputDirectory, PlanFirst: old.PlanFirst, TemplateID: old.TemplateID,
		TimeoutMinutes: old.TimeoutMinutes, MaxIterations: old.MaxIterations, NetworkMode: old.NetworkMode,
		ToolPolicy: old.ToolPolicy, AllowHosts: old.AllowHosts, ReasoningEnabled: old.ReasoningEnabled, BudgetUSD: old.BudgetUSD, BudgetTokens: old.BudgetTokens,
		SkillNames: old.SkillNames, HostFolders: old.HostFolders, Provisioning: old.Provisioning,
		ReasoningEffort: old.ReasoningEffort, RerunOfID: &oldID,
		ContinuationOfID: old.ContinuationOfID, ContextNote: old.ContextNote,
	}
	h, err := o.readHooks(oldID)
	if err != nil {
		return store.Task{}, err
	}
	if err := o.writeHooks(t.ID, h); err != nil {
		return store.Task{}, err
	}
	return o.queue(ctx, t, srcs, false)
}

// rerunModel is the provider and model of a rerun: the old task's unless
// with names others. An unknown provider is an invalid request that lists
// the configured ones.
func (o *Orchestrator) rerunModel(ctx context.Context, old store.Task, with RerunWith) (provider, model string, err error) {
	name, model := strings.TrimSpace(with.ProviderName), strings.TrimSpace(with.ModelID)
	if name == "" {
		return old.ProviderName, or(model, old.ModelID), nil
	}
	p, err := o.cfg.Store.FindProvider(ctx, name)
	if errors.Is(err, errdefs.ErrNotFound) {
		providers, lerr := o.cfg.Store.ListProviders(ctx)
		if lerr != nil {
			return "", "", lerr
		}
		return "", "", errdefs.Invalidf("providerName %q: no such provider (configured: %s)", name, providerNames(providers))
	}
	if err != nil {
		return "", "", err
	}
	model = or(model, p.DefaultModelID)
	if model == "" {
		return "", "", errdefs.Invalidf("modelId is required: provider %s has no default model", p.DisplayName)
	}
	return p.DisplayName, model, nil
}

// Batch limits: copies per target (as the Swift server) and tasks per batch.
const (
	MaxBatchCopies = 8
	MaxBatchTasks  = 32
)

// SubmitBatch checks and queues one task per copy of every target, all
// with the same description, options and input files (copied to each).
// Every target is checked before any task is stored, and the tasks are
// stored in one transaction: a batch is queued whole or not at all.
func (o *Orchestrator) SubmitBatch(ctx context.Context, in wire.CreateTaskBatch, uploads []files.Source) ([]store.Task, error) {
	if len(in.Targets) == 0 {
		return nil, errdefs.Invalidf("targets is required: a list of {providerId, modelId, copyCount}")
	}
	h, err := evalhooks.Of(in.CreateTask)
	if err != nil {
		return nil, err
	}
	var tasks []store.Task
	batch := uuid.NewString()
	for i, tg := range in.Targets {
		provider, model := strings.TrimSpace(tg.ProviderID), strings.TrimSpace(tg.ModelID)
		if provider == "" {
			return nil, errdefs.Invalidf("targets[%d].providerId is required", i)
		}
		if model == "" {
			return nil, errdefs.Invalidf("targets[%d].modelId is required", i)
		}
		copies := 1
		if tg.CopyCount != nil {
			copies = *tg.CopyCount
		}
		if copies < 1 || copies > MaxBatchCopies {
			return nil, errdefs.Invalidf("targets[%d].copyCount %d: want 1..%d", i, copies, MaxBatchCopies)
		}
		if len(tasks)+copies > MaxBatchTasks {
			return nil, errdefs.Invalidf("a batch makes at most %d tasks", MaxBatchTasks)
		}
		one := in.CreateTask
		one.ProviderName, one.ModelID = provider, model
		if tg.ReasoningEnabled != nil {
			one.ReasoningEnabled = tg.ReasoningEnabled
		}
		if e := strings.TrimSpace(tg.ReasoningEffort); e != "" {
			one.ReasoningEffort = e
		}
		for range copies {
			t, err := o.Check(ctx, one)
			if err != nil {
				return nil, fmt.Errorf("targets[%d]: %w", i, err)
			}
			t.BatchID = batch
			tasks = append(tasks, t)
		}
	}
	cont, err := continuation.Of(ctx, o.cfg.Store, o.cfg.Paths.Home, in.ContinuationSourceTaskID)
	if err != nil {
		return nil, err
	}
	var srcs []files.Source
	for i := range tasks {
		srcs = cont.Apply(&tasks[i], uploads)
	}
	inputs := make([][]store.TaskFile, len(tasks))
	cleanup := func() {
		for _, t := range tasks {
			os.RemoveAll(o.taskDir(t.ID))
		}
	}
	for i, t := range tasks {
		if err := o.writeHooks(t.ID, h); err != nil {
			cleanup()
			return nil, err
		}
		fs, err := o.stageInputs(t.ID, srcs, false)
		if err != nil {
			cleanup()
			return nil, err
		}
		inputs[i] = fs
	}
	if err := o.cfg.Store.CreateTasks(ctx, tasks, inputs); err != nil {
		cleanup()
		return nil, err
	}
	for _, t := range tasks {
		o.hub.notify(t.ID)
	}
	o.Kick()
	for _, t := range tasks {
		o.titleLater(t)
	}
	return tasks, nil
}
