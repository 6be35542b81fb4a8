package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdShow: hivecrew show ID
func cmdShow(e *env, args []string) error {
	_, t, err := e.taskNow(args, e.flags())
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	showTask(e.stdout, t)
	return nil
}

// showTask prints a task's details.
func showTask(w io.Writer, t wire.Task) {
	status := stateAndReason(t)

	fs := []field{
		{"ID", t.ID},
		{"Title", t.Title},
		{"Status", status},
		{"Provider", strings.TrimSuffix(t.ProviderName+" / "+t.ModelID, " / ")},
		{"Created", localTime(t.CreatedAt)},
	}
	if t.StartedAt != nil {
		fs = append(fs, field{"Started", localTime(*t.StartedAt)})
	}
	if t.CompletedAt != nil {
		fs = append(fs, field{"Ended", localTime(*t.CompletedAt)})
	}
	if t.Duration != nil {
		fs = append(fs, field{"Duration", clock(time.Duration(*t.Duration) * time.Second)})
	}
	if t.StepCount != nil {
		fs = append(fs, field{"Steps", fmt.Sprint(*t.StepCount)})
	}
	if u := t.TokenUsage; u != nil {
		tokens := fmt.Sprintf("%d (%d prompt, %d completion)", u.Total, u.Prompt, u.Completion)
		if t.CostUSD != nil && *t.CostUSD > 0 {
			tokens += fmt.Sprintf(", $%.4f", *t.CostUSD)
		}
		fs = append(fs, field{"Tokens", tokens})
	}
	fs = append(fs,
		field{"Template", t.TemplateID},
		field{"Network", t.NetworkMode},
		field{"VM", t.VMID},
		field{"Output dir", t.OutputDirectory},
		field{"Schedule", t.ScheduleID},
		field{"Rerun of", t.RerunOf},
		field{"Continues", t.ContinuationSourceTaskID},
	)
	if t.TimeoutMinutes > 0 {
		fs = append(fs, field{"Timeout", fmt.Sprintf("%d min", t.TimeoutMinutes)})
	}
	if t.MaxIterations > 0 {
		fs = append(fs, field{"Max steps", fmt.Sprint(t.MaxIterations)})
	}
	if len(t.ToolPolicy) > 0 {
		var p []string
		for tool, perm := range t.ToolPolicy {
			p = append(p, tool+"="+perm)
		}
		slices.Sort(p)
		fs = append(fs, field{"Tool policy", strings.Join(p, ", ")})
	}
	if t.PlanFirst {
		fs = append(fs, field{"Plan first", "yes"})
	}
	if len(t.HostFolders) > 0 {
		var dirs []string
		for _, f := range t.HostFolders {
			dirs = append(dirs, f.Path)
		}
		fs = append(fs, field{"Host folders", strings.Join(dirs, "\n")})
	}
	fs = append(fs, field{"Description", t.Description})
	if t.PlanMarkdown != nil {
		plan := *t.PlanMarkdown
		if t.Status == statusPlanReview {
			plan += "\n\n" + planNext(t.ID)
		}
		fs = append(fs, field{"Plan", plan})
	} else if t.Status == statusPlanning {
		fs = append(fs, field{"Plan", "(the model is writing it)"})
	}
	if t.PlanRevision != "" {
		fs = append(fs, field{"Revision", "the model rewrites the plan as you asked: " + t.PlanRevision})
	}
	if len(t.Todo) > 0 {
		fs = append(fs, field{"Checklist", checklist(t.Todo)})
	}
	if t.ResultSummary != nil {
		fs = append(fs, field{"Summary", *t.ResultSummary})
	}
	if q := t.PendingQuestion; q != nil {
		text := q.Question
		if len(q.SuggestedAnswers) > 0 {
			text += "\nchoices: " + strings.Join(q.SuggestedAnswers, " | ")
		}
		text += fmt.Sprintf("\nanswer with: hivecrew answer %s \"<answer>\"", shortID(t.ID))
		fs = append(fs, field{"Question", text})
	}
	if t.Status == "writebackReview" {
		fs = append(fs, field{"Review", fmt.Sprintf("the agent's changes to the host folders wait for you (it ended %s)\nhivecrew review %s  lists them; --approve or --discard decides", statusWords(t.EndStatus), shortID(t.ID))})
	}
	if p := t.PendingPermission; p != nil {
		text := p.ToolName
		if p.Details != "" {
			text += ": " + p.Details
		}
		text += fmt.Sprintf("\nhivecrew approve %s  or  hivecrew deny %s", shortID(t.ID), shortID(t.ID))
		fs = append(fs, field{"Permission", text})
	}
	var b strings.Builder
	for _, f := range t.OutputFiles {
		switch {
		case f.SavedTo != "":
			fmt.Fprintf(&b, "%s (%s) saved to %s\n", f.Name, size(f.Size), f.SavedTo)
		default:
			fmt.Fprintf(&b, "%s (%s) NOT SAVED to the output folder: `hivecrew files %s --get %s` downloads it\n", f.Name, size(f.Size), shortID(t.ID), f.Name)
		}
	}
	fs = append(fs, field{"Input files", fileList(t.InputFiles)}, field{"Output files", b.String()})
	fields(w, fs...)
}

// fileList lists files one a line with their sizes.
func fileList(files []wire.File) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s (%s)\n", f.Name, size(f.Size))
	}
	return b.String()
}

// checklist is a task's checklist, an item a line: "[x] 1. Open the file".
func checklist(items []wire.TodoItem) string {
	lines := make([]string, len(items))
	for i, it := range items {
		mark := " "
		if it.Done {
			mark = "x"
		}
		lines[i] = fmt.Sprintf("[%s] %d. %s", mark, i+1, it.Text)
	}
	return strings.Join(lines, "\n")
}
