package orchestrator

import (
	"context"

	"github.com/hivecrew/hivecrew/core/wire"
)

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
		Provisioning: t.Provisioning.Wire(), SetupCommand: h.Setup, CheckCommand: h.Check,
		SwiftTaskFields: wire.SwiftTaskFields{MentionedSkillNames: t.SkillNames},
	}, nil
}
