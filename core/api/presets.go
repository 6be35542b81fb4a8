package api

import (
	"net/http"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Presets (extension): saved tasks, launched by name.

func (a *API) presetJSON(r *http.Request, p store.Preset) (wire.Preset, error) {
	fs, err := a.st.PresetFiles(r.Context(), p.ID)
	if err != nil {
		return wire.Preset{}, err
	}
	w := wire.Preset{ID: p.ID, Name: p.Name, Task: p.Task, InputFiles: make([]wire.File, len(fs)), UseCount: p.UseCount,
		LastUsedAt: tsp(p.LastUsedAt), CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
	for i, f := range fs {
		at := ts(f.CreatedAt)
		w.InputFiles[i] = wire.File{Name: f.Name, Size: f.Size, MimeType: or(f.MimeType, files.MimeType(f.Name)), UploadedAt: &at}
	}
	return w, nil
}

func (a *API) writePreset(w http.ResponseWriter, r *http.Request, status int, p store.Preset) error {
	out, err := a.presetJSON(r, p)
	if err != nil {
		return err
	}
	return writeJSON(w, status, out)
}

func (a *API) listPresets(w http.ResponseWriter, r *http.Request) error {
	list, err := a.st.ListPresets(r.Context())
	if err != nil {
		return err
	}
	out := wire.PresetList{Presets: make([]wire.Preset, len(list))}
	for i, p := range list {
		if out.Presets[i], err = a.presetJSON(r, p); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) getPreset(w http.ResponseWriter, r *http.Request) error {
	p, err := a.st.FindPreset(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return a.writePreset(w, r, http.StatusOK, p)
}

// createPreset saves a preset: JSON {name, task | fromTaskId}, or
// multipart with that JSON in a part named "preset" and "files" parts.
func (a *API) createPreset(w http.ResponseWriter, r *http.Request) error {
	in, uploads, done, err := receive(a, w, r, presetFromForm)
	if err != nil {
		return err
	}
	defer done()
	if err := a.stepUpForPreset(r, in); err != nil {
		return err
	}
	p, err := a.ps.Create(r.Context(), in, uploads)
	if err != nil {
		return err
	}
	return a.writePreset(w, r, http.StatusCreated, p)
}

// presetFromForm reads a multipart POST /presets: the JSON body in a part
// named "preset".
func presetFromForm(w http.ResponseWriter, f form) (wire.SavePreset, error) {
	var in wire.SavePreset
	raw, err := f.one("preset")
	if err != nil {
		return in, err
	}
	if raw == "" {
		return in, errdefs.Invalidf("preset is required: a part holding {\"name\": ..., \"task\": {...}}")
	}
	if err := decodeJSON(w, []byte(raw), &in); err != nil {
		return in, errdefs.Invalidf("preset part: %v", err)
	}
	return in, nil
}

// stepUpForPreset asks a web session for a fresh sign-in where the task
// would: a preset that grants more than Settings grants it to every task
// it launches. A preset made from a task takes that task's grants.
func (a *API) stepUpForPreset(r *http.Request, in wire.SavePreset) error {
	if in.Task != nil {
		return a.stepUpForTask(r, *in.Task)
	}
	if in.FromTaskID == "" {
		return nil
	}
	return a.stepUpForTaskOf(r, in.FromTaskID)
}

func (a *API) patchPreset(w http.ResponseWriter, r *http.Request) error {
	var in wire.SavePreset
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if err := a.stepUpForPreset(r, wire.SavePreset{Task: in.Task}); err != nil {
		return err
	}
	p, err := a.ps.Update(r.Context(), r.PathValue("id"), in)
	if err != nil {
		return err
	}
	return a.writePreset(w, r, http.StatusOK, p)
}

func (a *API) deletePreset(w http.ResponseWriter, r *http.Request) error {
	if err := a.ps.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// runPreset launches a preset's task: 201 with the task as POST /tasks
// answers it. The body is optional: {extraInstructions}.
func (a *API) runPreset(w http.ResponseWriter, r *http.Request) error {
	var in wire.RunPreset
	if r.ContentLength != 0 {
		if err := decode(w, r, &in); err != nil {
			return err
		}
	}
	p, err := a.st.FindPreset(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := a.stepUpForTask(r, p.Task); err != nil {
		return err
	}
	t, err := a.ps.Launch(r.Context(), p.ID, in)
	if err != nil {
		return err
	}
	return a.writeCreated(w, r, http.StatusCreated, t)
}
