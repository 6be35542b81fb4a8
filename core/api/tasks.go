package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
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
		ProviderName: t.ProviderName, ModelID: t.ModelID, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt,
		CompletedAt: t.CompletedAt, ResultSummary: t.ResultSummary, WasSuccessful: t.WasSuccessful, VMID: t.VMID,
		PlanFirst: t.PlanFirst, OutputDirectory: t.OutputDirectory, TemplateID: t.TemplateID,
		TimeoutMinutes: t.TimeoutMinutes, MaxIterations: t.MaxIterations, NetworkMode: t.NetworkMode, ToolPolicy: t.ToolPolicy,
		TraceDeletedAt: t.TraceDeletedAt,
	}
	if t.PlanMarkdown != "" {
		w.PlanMarkdown = &t.PlanMarkdown
	}
	if t.ScheduleID != nil {
		w.ScheduleID = *t.ScheduleID
	}
	if t.RerunOfID != nil {
		w.RerunOf = *t.RerunOfID
	}
	if t.StartedAt != nil {
		end := time.Now()
		if t.CompletedAt != nil {
			end = *t.CompletedAt
		}
		d := end.Sub(*t.StartedAt).Seconds()
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
			w.PendingQuestion = &wire.Question{ID: q.ID, Question: q.Text, SuggestedAnswers: q.Options, CreatedAt: q.Created}
		}
		if p := live.Permission; p != nil {
			w.PendingPermission = &wire.Permission{ID: p.ID, ToolName: p.Tool, Details: p.Details, CreatedAt: p.Created}
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
		at := f.CreatedAt
		out[i] = wire.File{Name: f.Name, Size: f.Size, MimeType: f.MimeType, SavedTo: f.SavedPath}
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
	return a.taskJSON(t, in, out, nil), nil
}

// received is a request body with files: its form fields and uploads,
// staged in a temporary folder that cleanup removes.
type received struct {
	form    map[string]string
	uploads []orchestrator.Upload
	cleanup func()
}

// receive reads a JSON body into v, or a multipart body into fields and
// staged uploads (then rec is non-nil; call rec.cleanup when done).
func (a *API) receive(w http.ResponseWriter, r *http.Request, v any) (*received, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return nil, decode(w, r, v)
	}
	tmp, err := os.MkdirTemp(a.cfg.Paths.Tasks(), ".upload-")
	if err != nil {
		return nil, fmt.Errorf("receive upload: %w", err)
	}
	form, ups, err := a.readMultipart(w, r, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &received{form: form, uploads: ups, cleanup: func() { os.RemoveAll(tmp) }}, nil
}

func (a *API) createTask(w http.ResponseWriter, r *http.Request) error {
	var (
		in      wire.CreateTask
		uploads []orchestrator.Upload
	)
	rec, err := a.receive(w, r, &in)
	if err != nil {
		return err
	}
	if rec != nil {
		defer rec.cleanup()
		if in, err = taskFromForm(rec.form); err != nil {
			return err
		}
		uploads = rec.uploads
	}
	t, err := a.o.Submit(r.Context(), in, uploads)
	if err != nil {
		return err
	}
	return a.writeTask(w, r, http.StatusCreated, t.ID)
}

// taskFields are the form fields of a multipart POST /tasks.
var taskFields = map[string]bool{
	"description": true, "providerName": true, "modelId": true, "outputDirectory": true, "planFirst": true,
	"templateId": true, "timeoutMinutes": true, "maxIterations": true, "networkMode": true, "toolPolicy": true,
}

func taskFromForm(form map[string]string) (wire.CreateTask, error) {
	var in wire.CreateTask
	for k := range form {
		if !taskFields[k] {
			return in, errdefs.Invalidf("unknown form field %q", k)
		}
	}
	in.Description, in.ProviderName, in.ModelID = form["description"], form["providerName"], form["modelId"]
	in.OutputDirectory, in.TemplateID, in.NetworkMode = form["outputDirectory"], form["templateId"], form["networkMode"]
	var err error
	if v := form["planFirst"]; v != "" {
		if in.PlanFirst, err = strconv.ParseBool(v); err != nil {
			return in, errdefs.Invalidf("planFirst %q: want true or false", v)
		}
	}
	for name, dst := range map[string]*int{"timeoutMinutes": &in.TimeoutMinutes, "maxIterations": &in.MaxIterations} {
		if v := form[name]; v != "" {
			if *dst, err = strconv.Atoi(v); err != nil {
				return in, errdefs.Invalidf("%s %q: want an integer", name, v)
			}
		}
	}
	if v := form["toolPolicy"]; v != "" {
		if err := json.Unmarshal([]byte(v), &in.ToolPolicy); err != nil {
			return in, errdefs.Invalidf("toolPolicy: want a JSON object from tool name to allow, ask or deny: %v", jsonProblem(err))
		}
	}
	return in, nil
}

// readMultipart streams a multipart body: form fields into a map, "files"
// parts into files under tmp. The body is capped at MaxUploadBytes.
func (a *API) readMultipart(w http.ResponseWriter, r *http.Request, tmp string) (map[string]string, []orchestrator.Upload, error) {
	r.Body = http.MaxBytesReader(w, r.Body, a.cfg.MaxUploadBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, errdefs.Invalidf("bad multipart body: %v", err)
	}
	form := map[string]string{}
	var ups []orchestrator.Upload
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, multipartErr(err)
		}
		name := part.FormName()
		switch {
		case name == "files" || name == "file":
			// The raw name, not Part.FileName (which drops directories):
			// a name with a path is refused, not silently shortened.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			fname, err := files.CheckName(params["filename"])
			if err != nil {
				return nil, nil, err
			}
			if seen[fname] {
				return nil, nil, errdefs.Invalidf("input file %q given twice", fname)
			}
			seen[fname] = true
			path := filepath.Join(tmp, fmt.Sprintf("%d", len(ups)))
			if err := savePart(part, path); err != nil {
				return nil, nil, multipartErr(err)
			}
			ups = append(ups, orchestrator.Upload{Name: fname, Path: path})
		case part.FileName() != "":
			return nil, nil, errdefs.Invalidf("file part %q: files go in parts named \"files\"", name)
		default:
			b, err := io.ReadAll(io.LimitReader(part, maxJSONBytes+1))
			if err != nil {
				return nil, nil, multipartErr(err)
			}
			if len(b) > maxJSONBytes {
				return nil, nil, errdefs.TooLargef("form field %q is over %d bytes", name, maxJSONBytes)
			}
			if _, dup := form[name]; dup {
				return nil, nil, errdefs.Invalidf("form field %q given twice", name)
			}
			form[name] = string(b)
		}
	}
	return form, ups, nil
}

func multipartErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return errdefs.Invalidf("bad multipart body: %v", err)
}

func savePart(part *multipart.Part, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, part)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (a *API) listTasks(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := intParam(r, "limit", 50, 1, 200)
	if err != nil {
		return err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	query := store.TaskQuery{Limit: limit, Offset: offset, Search: q.Get("search"), Sort: store.TaskSort(q.Get("sort"))}
	if s := q.Get("status"); s != "" {
		for _, v := range strings.Split(s, ",") {
			st := store.TaskStatus(strings.TrimSpace(v))
			if !st.Valid() {
				return errdefs.Invalidf("status %q: want one or more of %s", v, statusNames())
			}
			query.Statuses = append(query.Statuses, st)
		}
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		query.Asc = true
	default:
		return errdefs.Invalidf("order %q: want asc or desc", q.Get("order"))
	}
	tasks, total, err := a.st.ListTasks(r.Context(), query)
	if err != nil {
		return err
	}
	out := wire.TaskList{Tasks: make([]wire.Task, len(tasks)), Total: total, Limit: limit, Offset: offset}
	for i, t := range tasks {
		out.Tasks[i] = a.taskJSON(t.Task, nil, nil, &[2]int{t.InputFileCount, t.OutputFileCount})
	}
	return writeJSON(w, http.StatusOK, out)
}

func statusNames() string {
	names := make([]string, len(store.TaskStatuses))
	for i, s := range store.TaskStatuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
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
	var err error
	switch body.Action {
	case wire.ActionCancel:
		err = a.o.Cancel(ctx, id)
	case wire.ActionPause:
		err = a.o.Pause(ctx, id)
	case wire.ActionResume:
		err = a.o.Resume(ctx, id, body.Instructions)
	case wire.ActionRerun:
		t, err := a.o.Rerun(ctx, id)
		if err != nil {
			return err
		}
		return a.writeTask(w, r, http.StatusCreated, t.ID)
	case wire.ActionApprovePlan, wire.ActionEditPlan, wire.ActionCancelPlan:
		err = a.o.Plan(ctx, id, body.Action, body.PlanMarkdown)
	case "":
		return errdefs.Invalidf("action is required: cancel, pause, resume, rerun, approve_plan, edit_plan or cancel_plan")
	default:
		return errdefs.Invalidf("unknown action %q: want cancel, pause, resume, rerun, approve_plan, edit_plan or cancel_plan", body.Action)
	}
	if err != nil {
		return err
	}
	if body.Action == wire.ActionApprovePlan || body.Action == wire.ActionEditPlan {
		waitChange(r, a.o.Watch(id))
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

func (a *API) deleteTask(w http.ResponseWriter, r *http.Request) error {
	if err := a.o.Delete(r.Context(), r.PathValue("id")); err != nil {
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

func nonNil(f []wire.File) []wire.File {
	if f == nil {
		return []wire.File{}
	}
	return f
}

// taskFile serves a file's bytes. The file is opened through an os.Root at
// the folder it must be in (the task's inputs, or the session's
// artifacts), so a stored path can never lead outside it.
func (a *API) taskFile(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.PathValue("name")
	kinds := []store.FileKind{store.FileOutput, store.FileInput}
	switch typ := r.URL.Query().Get("type"); typ {
	case "":
	case "output":
		kinds = kinds[:1]
	case "input":
		kinds = kinds[1:]
	default:
		return errdefs.Invalidf("type %q: want output or input", typ)
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
