package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Creating tasks: POST /tasks and POST /tasks/batch, as JSON or as the
// fields of a multipart form with input files.

func (a *API) createTask(w http.ResponseWriter, r *http.Request) error {
	in, uploads, done, err := receive(a, w, r, func(w http.ResponseWriter, f form) (wire.CreateTask, error) {
		return taskFromForm(w, f)
	})
	if err != nil {
		return err
	}
	defer done()
	if err := a.stepUpForTask(r, in); err != nil {
		return err
	}
	t, err := a.o.Submit(r.Context(), in, uploads)
	if err != nil {
		return err
	}
	return a.writeCreated(w, r, http.StatusCreated, t)
}

// writeCreated answers with a task just stored, as it was stored
// (queued): the dispatcher may have taken it already, and an answer read
// back could say waitingForVM or running, which a client that checks the
// answer of its POST does not expect.
func (a *API) writeCreated(w http.ResponseWriter, r *http.Request, status int, t store.Task) error {
	wt, err := a.createdJSON(r, t)
	if err != nil {
		return err
	}
	return writeJSON(w, status, wt)
}

func (a *API) createdJSON(r *http.Request, t store.Task) (wire.Task, error) {
	in, err := a.st.TaskFiles(r.Context(), t.ID, store.FileInput)
	if err != nil {
		return wire.Task{}, err
	}
	wt := a.taskJSON(t, in, nil, nil)
	wt.PendingQuestion, wt.PendingPermission, wt.Screen, wt.TakenOver = nil, nil, nil, false
	return wt, nil
}

// createTaskBatch queues one task per copy of every target (POST
// /tasks/batch), JSON or multipart (the fields of POST /tasks, "targets"
// as a JSON array, "files" parts given to every task).
func (a *API) createTaskBatch(w http.ResponseWriter, r *http.Request) error {
	in, uploads, done, err := receive(a, w, r, batchFromForm)
	if err != nil {
		return err
	}
	defer done()
	if err := a.stepUpForTask(r, in.CreateTask); err != nil {
		return err
	}
	ts, err := a.o.SubmitBatch(r.Context(), in, uploads)
	if err != nil {
		return err
	}
	out := wire.TaskBatch{Tasks: make([]wire.Task, len(ts))}
	for i, t := range ts {
		if out.Tasks[i], err = a.createdJSON(r, t); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusCreated, out)
}

// batchFromForm reads the fields of a multipart POST /tasks/batch: those
// of POST /tasks and "targets" as a JSON array.
func batchFromForm(w http.ResponseWriter, f form) (wire.CreateTaskBatch, error) {
	var in wire.CreateTaskBatch
	raw, err := f.one("targets")
	if err != nil {
		return in, err
	}
	delete(f, "targets")
	if in.CreateTask, err = taskFromForm(w, f); err != nil {
		return in, err
	}
	if raw == "" {
		return in, errdefs.Invalidf("targets is required: a JSON array of {providerId, modelId, copyCount}")
	}
	if err := json.Unmarshal([]byte(raw), &in.Targets); err != nil {
		return in, errdefs.Invalidf("targets: want a JSON array of {providerId, modelId, copyCount}: %v", jsonProblem(err))
	}
	return in, nil
}

// taskFromForm reads the fields of a multipart POST /tasks: the JSON body's
// fields, lists as repeated parts (or name[] parts), toolPolicy as JSON.
// Fields it does not know are ignored as in a JSON body (a near-miss of a
// known one is a 400).
func taskFromForm(w http.ResponseWriter, f form, more ...string) (wire.CreateTask, error) {
	var in wire.CreateTask
	known := append(slices.Clip(jsonFieldNames(reflect.TypeOf(in))), more...)
	var ignored []string
	for k := range f {
		name := strings.TrimSuffix(k, "[]")
		if slices.Contains(known, name) {
			continue
		}
		if near := nearest(name, known); near != "" {
			return in, errdefs.Invalidf("unknown form field %q: did you mean %q?", k, near)
		}
		ignored = append(ignored, k)
	}
	if len(ignored) > 0 && w != nil {
		slices.Sort(ignored)
		w.Header().Set("X-Hivecrew-Ignored-Fields", strings.Join(ignored, ", "))
	}
	strs := map[string]*string{
		"description": &in.Description, "providerName": &in.ProviderName, "modelId": &in.ModelID,
		"outputDirectory": &in.OutputDirectory, "templateId": &in.TemplateID, "networkMode": &in.NetworkMode,
		"reasoningEffort": &in.ReasoningEffort, "priority": &in.Priority,
		"continuationSourceTaskId": &in.ContinuationSourceTaskID, "contextPackId": &in.ContextPackID,
		"setupCommand": &in.SetupCommand, "checkCommand": &in.CheckCommand,
	}
	for name, dst := range strs {
		v, err := f.one(name)
		if err != nil {
			return in, err
		}
		*dst = v
	}
	// The description keeps its inner whitespace; only its ends are trimmed.
	var err error
	if v, _ := f.one("planFirst"); v != "" {
		if in.PlanFirst, err = formBool("planFirst", v); err != nil {
			return in, err
		}
	}
	if v, _ := f.one("reasoningEnabled"); v != "" {
		b, err := formBool("reasoningEnabled", v)
		if err != nil {
			return in, err
		}
		in.ReasoningEnabled = &b
	}
	for name, dst := range map[string]*int{"timeoutMinutes": &in.TimeoutMinutes, "maxIterations": &in.MaxIterations} {
		v, err := f.one(name)
		if err != nil {
			return in, err
		}
		if v != "" {
			if *dst, err = strconv.Atoi(v); err != nil {
				return in, errdefs.Invalidf("%s %q: want an integer", name, v)
			}
		}
	}
	v, err := f.one("toolPolicy")
	if err != nil {
		return in, err
	}
	if v != "" {
		if err := json.Unmarshal([]byte(v), &in.ToolPolicy); err != nil {
			return in, errdefs.Invalidf("toolPolicy: want a JSON object from tool name to allow, ask or deny: %v", jsonProblem(err))
		}
	}
	in.AllowHosts = f.list("allowHosts")
	in.HostFolders = f.list("hostFolders")
	if v, err := f.one("provisioning"); err != nil {
		return in, err
	} else if v != "" {
		if err := decodeJSON(nil, []byte(v), &in.Provisioning); err != nil {
			return in, errdefs.Invalidf("provisioning: want a JSON object {environment, setupCommands}: %v", err)
		}
	}
	if v, err := f.one("budgetUSD"); err != nil {
		return in, err
	} else if v != "" {
		usd, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return in, errdefs.Invalidf("budgetUSD %q: want a number", v)
		}
		in.BudgetUSD = &usd
	}
	if v, err := f.one("budgetTokens"); err != nil {
		return in, err
	} else if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return in, errdefs.Invalidf("budgetTokens %q: want an integer", v)
		}
		in.BudgetTokens = &n
	}
	in.MentionedSkillNames, in.ReferencedTaskIDs = f.list("mentionedSkillNames"), f.list("referencedTaskIds")
	return in, nil
}
