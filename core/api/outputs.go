package api

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/hostpath"
	"github.com/hivecrew/hivecrew/core/reveal"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// openOutput opens a task's output file, as saved to its output folder,
// on this computer with its default application, or with {"folder": true}
// shows the folder it is in (core/reveal checks the path first: the name
// is the guest's).
func (a *API) openOutput(w http.ResponseWriter, r *http.Request) error {
	var in wire.OpenOutput
	if r.ContentLength != 0 {
		if err := decode(w, r, &in); err != nil {
			return err
		}
	}
	id, name := r.PathValue("id"), r.PathValue("name")
	t, err := a.st.GetTask(r.Context(), id)
	if err != nil {
		return err
	}
	outs, err := a.st.TaskFiles(r.Context(), id, store.FileOutput)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(outs, func(f store.TaskFile) bool { return f.Name == name })
	if i < 0 {
		return errdefs.NotFoundf("task %s has no output %q", id, name)
	}
	if outs[i].SavedPath == "" {
		return errdefs.Conflictf("%s was not saved to an output folder: download it instead", name)
	}
	root := cmp.Or(t.OutputDirectory, a.cfg.Settings().OutputDirectory)
	target := reveal.Target{Root: root, SavedPath: outs[i].SavedPath, Folder: in.Folder}
	if err := reveal.Open(r.Context(), target, hostpath.Self(), a.cfg.Launch); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
