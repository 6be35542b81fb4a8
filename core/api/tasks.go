package api

import (
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// taskJSON converts a stored task for the wire, with its live state; with
// files, the file lists, else their counts.
func (a *API) taskJSON(t store.Task, in, out []store.TaskFile, counts *[2]int) wire.Task {
	w := wire.Task{
		ID: t.ID, Title: t.Title, Description: t.Description, Status: string(t.Status), StatusReason: t.StatusReason,
		ProviderName: t.ProviderName, ModelID: t.ModelID, CreatedAt: ts(t.CreatedAt), StartedAt: tsp(t.StartedAt),
		CompletedAt: tsp(t.CompletedAt), ResultSummary: t.ResultSummary, WasSuccessful: t.WasSuccessful, VMID: t.VMID,
		PlanFirst: t.PlanFirst, ReasoningEnabled: t.ReasoningEnabled, OutputDirectory: t.OutputDirectory, TemplateID: t.TemplateID,
		TimeoutMinutes: t.TimeoutMinutes, MaxIterations: t.MaxIterations, NetworkMode: t.NetworkMode, ToolPolicy: t.ToolPolicy,
		AllowHosts: t.AllowHosts, BatchID: t.BatchID, TraceDeletedAt: tsp(t.TraceDeletedAt),
		BudgetUSD: t.BudgetUSD, BudgetTokens: t.BudgetTokens,
	}
	if t.ReasoningEffort != "" {
		w.ReasoningEffort = &t.ReasoningEffort
	}
	ended := t.Status
	if t.Status == store.StatusWritebackReview {
		ended = t.EndStatus
		w.EndStatus = string(t.EndStatus)
	}
	for _, f := range t.HostFolders {
		w.HostFolders = append(w.HostFolders, wire.HostFolder{Name: f.Name, Path: f.Path})
	}
	w.Provisioning = t.Provisioning.Wire()
	w.AppliedWritebackPaths = t.AppliedWritebackPaths
	if ended.Terminal() && ended != store.StatusCompleted && ended != store.StatusCancelled {
		msg := t.StatusReason
		if msg == "" && t.ResultSummary != nil {
			msg = *t.ResultSummary
		}
		if msg != "" {
			w.ErrorMessage = &msg
		}
	}
	if t.PlanMarkdown != "" {
		w.PlanMarkdown = &t.PlanMarkdown
	}
	w.PlanRevision = t.PlanRevision
	for _, it := range t.Todo {
		w.Todo = append(w.Todo, wire.TodoItem{Text: it.Text, Done: it.Done})
	}
	if t.ScheduleID != nil {
		w.ScheduleID = *t.ScheduleID
	}
	if t.RerunOfID != nil {
		w.RerunOf = *t.RerunOfID
	}
	if t.ContinuationOfID != nil {
		w.ContinuationSourceTaskID = *t.ContinuationOfID
	}
	w.TitleEdited = t.TitleEdited
	if t.ParentTaskID != nil {
		w.ParentTaskID = *t.ParentTaskID
		w.SubagentDomain = or(t.SubagentDomain, store.DomainVM)
	}
	w.MentionedSkillNames = t.SkillNames
	if t.StartedAt != nil {
		end := time.Now()
		if t.CompletedAt != nil {
			end = *t.CompletedAt
		}
		d := int64(end.Sub(*t.StartedAt).Round(time.Second) / time.Second)
		w.Duration = &d
	}
	if t.StepCount > 0 || t.StartedAt != nil {
		n := t.StepCount
		w.StepCount = &n
	}
	if t.PromptTokens > 0 || t.CompletionTokens > 0 {
		w.TokenUsage = &wire.TokenUsage{Prompt: t.PromptTokens, Completion: t.CompletionTokens, Total: t.PromptTokens + t.CompletionTokens}
		c := t.CostUSD
		w.CostUSD = &c
	}
	if live, ok := a.o.Live(t.ID); ok {
		w.TakenOver = live.TakenOver
		if scr := live.Screen; scr.Width > 0 && scr.Height > 0 {
			w.Screen = &wire.Screen{Width: scr.Width, Height: scr.Height, Scale: scr.Scale}
		}
		if q := live.Question; q != nil {
			w.PendingQuestion = &wire.Question{ID: q.ID, Question: q.Text, SuggestedAnswers: q.Options, CreatedAt: ts(q.Created)}
		}
		if p := live.Permission; p != nil {
			w.PendingPermission = &wire.Permission{ID: p.ID, ToolName: p.Tool, Details: p.Details, CreatedAt: ts(p.Created)}
		}
	}
	if counts != nil {
		w.InputFileCount, w.OutputFileCount = &counts[0], &counts[1]
		return w
	}
	w.InputFiles, w.OutputFiles = filesJSON(in), filesJSON(out)
	return w
}

func filesJSON(fs []store.TaskFile) []wire.File {
	out := make([]wire.File, len(fs))
	for i, f := range fs {
		at := ts(f.CreatedAt)
		out[i] = wire.File{Name: f.Name, Size: f.Size, MimeType: or(f.MimeType, files.MimeType(f.Name)), SavedTo: f.SavedPath}
		if f.Kind == store.FileInput {
			out[i].UploadedAt = &at
		} else {
			out[i].CreatedAt = &at
		}
	}
	return out
}

// writeTask answers with a task as fullTask reads it.
func (a *API) writeTask(w http.ResponseWriter, r *http.Request, status int, id string) error {
	t, err := a.fullTask(r, id)
	if err != nil {
		return err
	}
	return writeJSON(w, status, t)
}

// fullTask reads a task with its files for the wire.
func (a *API) fullTask(r *http.Request, id string) (wire.Task, error) {
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		return wire.Task{}, err
	}
	in, err := a.st.TaskFiles(r.Context(), id, store.FileInput)
	if err != nil {
		return wire.Task{}, err
	}
	out, err := a.st.TaskFiles(r.Context(), id, store.FileOutput)
	if err != nil {
		return wire.Task{}, err
	}
	w := a.taskJSON(t, in, out, nil)
	kids, err := a.st.ChildTasks(r.Context(), id)
	if err != nil {
		return wire.Task{}, err
	}
	for _, k := range kids {
		w.Subagents = append(w.Subagents, wire.SubagentInfo{ID: k.ID, Title: k.Title, Status: string(k.Status), Domain: or(k.SubagentDomain, store.DomainVM)})
	}
	if t.Status == store.StatusWritebackReview {
		items, err := a.wb.Items(r.Context(), id)
		if err != nil {
			return wire.Task{}, err
		}
		p := wire.PendingWriteback{}
		for _, it := range items {
			switch it.State {
			case store.WritebackPending:
				p.Count++
			case store.WritebackConflict:
				p.HasConflicts = true
			}
		}
		w.PendingWriteback, w.PendingWritebackCount = &p, &p.Count
	}
	return w, nil
}

// listTasks lists tasks. Its query is read as the Swift server reads it:
// limit is clamped to 1..200, an unknown sort is createdAt, an order
// other than asc is desc, and status names it does not know (in camelCase
// or snake_case) match no task.
func (a *API) listTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := clampParam(r, "limit", 50, 1, 200)
	offset := clampParam(r, "offset", 0, 0, 1<<31-1)
	query := store.TaskQuery{Limit: limit, Offset: offset, Search: q.Get("search"), BatchID: q.Get("batchId"),
		Asc: strings.EqualFold(q.Get("order"), "asc")}
	switch sort := store.TaskSort(q.Get("sort")); sort {
	case store.SortStartedAt, store.SortCompletedAt:
		query.Sort = sort
	default:
		query.Sort = store.SortCreatedAt
	}
	out := wire.TaskList{Tasks: []wire.TaskSummary{}, Limit: limit, Offset: offset}
	if s := q.Get("status"); s != "" {
		for _, v := range strings.Split(s, ",") {
			if st, ok := parseStatus(v); ok {
				query.Statuses = append(query.Statuses, st)
			}
		}
		if len(query.Statuses) == 0 {
			return writeJSON(w, http.StatusOK, out) // as Swift: no status it knows, no task
		}
	}
	tasks, total, err := a.st.ListTasks(r.Context(), query)
	if err != nil {
		return err
	}
	out.Total = total
	for _, t := range tasks {
		out.Tasks = append(out.Tasks, wire.TaskSummary{Task: a.taskJSON(t.Task, nil, nil, &[2]int{t.InputFileCount, t.OutputFileCount})})
	}
	return writeJSON(w, http.StatusOK, out)
}

// parseStatus reads a status name in the API's camelCase (waitingForVM)
// or the Swift server's snake_case (waiting_for_vm).
func parseStatus(v string) (store.TaskStatus, bool) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "_", "")) }
	for _, st := range store.TaskStatuses {
		if norm(string(st)) == norm(v) {
			return st, true
		}
	}
	return "", false
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request) error {
	return a.writeTask(w, r, http.StatusOK, r.PathValue("id"))
}

func (a *API) patchTask(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body wire.TaskAction
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if _, err := a.st.GetTask(r.Context(), id); err != nil {
		return err
	}
	ctx := r.Context()
	changed := a.o.Watch(id)
	var err error
	switch body.Action {
	case wire.ActionCancel:
		err = a.o.Cancel(ctx, id)
	case wire.ActionPause:
		err = a.o.Pause(ctx, id)
	case wire.ActionResume:
		err = a.o.Resume(ctx, id, body.Instructions, orchestrator.Budget{USD: body.BudgetUSD, Tokens: body.BudgetTokens,
			ExtraSteps: body.ExtraSteps, ExtraMinutes: body.ExtraMinutes})
	case wire.ActionInstruct:
		if strings.TrimSpace(body.Instructions) == "" {
			return errdefs.Invalidf("instruct needs instructions")
		}
		err = a.o.Instruct(ctx, id, body.Instructions)
	case wire.ActionRerun:
		// A rerun grants the old task's folders, hosts, policy and
		// network again.
		if err := a.stepUpForTaskOf(r, id); err != nil {
			return err
		}
		t, err := a.o.Rerun(ctx, id, orchestrator.RerunWith{ProviderName: body.ProviderName, ModelID: body.ModelID})
		if err != nil {
			return err
		}
		return a.writeCreated(w, r, http.StatusOK, t)
	case wire.ActionRename:
		_, err = a.o.Rename(ctx, id, body.Title)
	case wire.ActionApprovePlan, wire.ActionEditPlan, wire.ActionCancelPlan:
		// As the Swift server: an edited plan comes in planMarkdown or,
		// failing that, instructions.
		err = a.o.Plan(ctx, id, body.Action, or(body.PlanMarkdown, body.Instructions))
	case wire.ActionRevisePlan:
		err = a.o.Plan(ctx, id, body.Action, body.Instructions)
	case wire.ActionApproveWriteback, wire.ActionDiscardWriteback:
		if _, err := a.wb.Resolve(ctx, id, body.Action == wire.ActionApproveWriteback, body.ItemIDs); err != nil {
			return err
		}
	case "":
		return errdefs.Invalidf("action is required: %s", strings.Join(wire.TaskActions, ", "))
	default:
		return errdefs.Invalidf("unknown action %q: want %s", body.Action, strings.Join(wire.TaskActions, ", "))
	}
	if err != nil {
		return err
	}
	switch body.Action {
	case wire.ActionApprovePlan, wire.ActionEditPlan, wire.ActionRevisePlan, wire.ActionCancelPlan:
		// The run applies these; answer with the task as it then is.
		waitChange(r, changed)
	}
	return a.writeTask(w, r, http.StatusOK, id)
}

// waitChange waits briefly for a task's next change, so that an answer
// reflects an action the run applies asynchronously.
func waitChange(r *http.Request, ch <-chan struct{}) {
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
	case <-r.Context().Done():
	}
}

// deleteTask deletes a task and all the helper keeps of it. As Swift's, a
// task that has not ended is cancelled first; with cancel=false it is
// refused (409) instead.
func (a *API) deleteTask(w http.ResponseWriter, r *http.Request) error {
	cancel := true
	if v := r.URL.Query().Get("cancel"); v != "" {
		var err error
		if cancel, err = strconv.ParseBool(v); err != nil {
			return errdefs.Invalidf("cancel %q: want true or false", v)
		}
	}
	if err := a.o.Delete(r.Context(), r.PathValue("id"), cancel); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) taskFiles(w http.ResponseWriter, r *http.Request) error {
	t, err := a.fullTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, wire.TaskFiles{TaskID: t.ID, InputFiles: nonNil(t.InputFiles), OutputFiles: nonNil(t.OutputFiles)})
}

// nonNil is s, or an empty list for nil: JSON lists are never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// taskFile serves a file's bytes. The file is opened through an os.Root at
// the folder it must be in (the task's inputs, or the session's
// artifacts), so a stored path can never lead outside it.
func (a *API) taskFile(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.PathValue("name")
	// As the Swift server: type=input is an input file; any other type an
	// output. Without a type, an output or else an input (extension).
	kinds := []store.FileKind{store.FileOutput, store.FileInput}
	switch typ := r.URL.Query().Get("type"); typ {
	case "":
	case "input":
		kinds = kinds[1:]
	default:
		kinds = kinds[:1]
	}
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	for _, kind := range kinds {
		fs, err := a.st.TaskFiles(r.Context(), id, kind)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.Name != name {
				continue
			}
			base := filepath.Join(a.cfg.Paths.Tasks(), id, "inputs")
			if kind == store.FileOutput {
				base = filepath.Join(a.cfg.Paths.Session(t.SessionID), "artifacts")
			}
			rel, err := filepath.Rel(base, filepath.Join(a.cfg.Paths.Home, filepath.FromSlash(f.Path)))
			if err != nil || t.SessionID == "" && kind == store.FileOutput {
				return errdefs.NotFoundf("file %s of task %s is not available", name, id)
			}
			return serveFrom(w, r, base, rel, f.MimeType, name)
		}
	}
	return errdefs.NotFoundf("task %s has no file %q", id, name)
}

// serveFrom serves base/rel without ever leaving base: as a download
// named name, or inline when name is "".
func serveFrom(w http.ResponseWriter, r *http.Request, base, rel, mimeType, name string) error {
	missing := errdefs.NotFoundf("file %s is not available", or(name, filepath.Base(rel)))
	root, err := os.OpenRoot(base)
	if err != nil {
		return missing
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return missing
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return missing
	}
	if mimeType != "" {
		w.Header().Set("Content-Type", mimeType)
	}
	if name != "" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filepath.Base(name)}))
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}

// checkResult answers how a task's check command ended (extension for
// the evaluation harness).
func (a *API) checkResult(w http.ResponseWriter, r *http.Request) error {
	res, err := a.o.CheckResult(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
