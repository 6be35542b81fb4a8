package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/template"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/wire"
)

// templateRoutes registers the template endpoints and the VM rebuild.
//
//	GET    /api/v1/templates                 list (with build status and progress)
//	GET    /api/v1/templates/manifests       the manifests this helper ships
//	POST   /api/v1/templates                 build from a manifest, or seal a VM (202)
//	GET    /api/v1/templates/{id}            one template
//	GET    /api/v1/templates/{id}/log        its build log (text)
//	PATCH  /api/v1/templates/{id}            name, description, resources of new VMs
//	DELETE /api/v1/templates/{id}            204; 409 while a VM runs a task on it
//	POST   /api/v1/templates/{id}/default    make it the default
//	POST   /api/v1/templates/{id}/setup      macOS: boot it for its guided setup ({finish} ends it)
//	POST   /api/v1/vms/{id}/rebuild          replace an idle VM with a fresh clone (202)
func (a *API) templateRoutes(h func(pattern string, f handlerFunc)) {
	h("GET /api/v1/templates", a.listTemplates)
	h("GET /api/v1/templates/manifests", a.listManifests)
	h("POST /api/v1/templates", a.createTemplate)
	h("GET /api/v1/templates/{id}", a.getTemplate)
	h("GET /api/v1/templates/{id}/log", a.templateLog)
	h("PATCH /api/v1/templates/{id}", a.patchTemplate)
	h("DELETE /api/v1/templates/{id}", a.deleteTemplate)
	h("POST /api/v1/templates/{id}/default", a.defaultTemplateRoute)
	h("POST /api/v1/templates/{id}/setup", a.setupTemplate)
	h("POST /api/v1/vms/{id}/rebuild", a.rebuildVM)
}

func (a *API) templateJSON(t store.Template, def string) wire.Template {
	out := wire.Template{ID: t.ID, Name: t.Name, Description: t.Description, IsDefault: t.ID == def, CPUCount: t.CPUCount,
		MemoryMB: t.MemoryMB, DiskGB: t.DiskGB, MemoryGB: (t.MemoryMB + 1023) / 1024, DiskSizeGB: t.DiskGB,
		OS: t.OS, Kind: t.Kind, AgentVersion: t.AgentVersion, CreatedAt: ts(t.CreatedAt),
		TemplateBuild: wire.TemplateBuild{Status: or(t.Status, store.TemplateReady), StatusReason: t.StatusReason, Manifest: t.Manifest,
			ManifestVersion: t.ManifestVersion, Options: t.Options, ParentID: t.ParentID, SourceVMID: t.SourceVMID,
			AgentOutdated: templateOutdated(t, a.cfg.Version)}}
	if !t.UpdatedAt.IsZero() {
		u := ts(t.UpdatedAt)
		out.UpdatedAt = &u
	}
	if a.cfg.Templates != nil && t.Status == store.TemplateBuilding {
		if p, ok := a.cfg.Templates.Progress(t.ID); ok {
			out.Progress = &wire.TemplateProgress{Phase: p.Phase, Percent: p.Percent, Message: p.Message}
		}
	}
	return out
}

// templateOutdated reports whether a template's installed guest agent is
// older than the helper's. Host templates have none installed (their VMs
// run the helper's own).
func templateOutdated(t store.Template, helper string) bool {
	return t.Kind != string(vm.KindHost) && template.AgentOutdated(t.AgentVersion, helper)
}

// defaultTemplate is the template new tasks use: the setting, else the one
// marked default, else the first; only a ready template qualifies.
func defaultTemplate(ts []store.Template, setting string) string {
	ready := slices.DeleteFunc(slices.Clone(ts), func(t store.Template) bool {
		return t.Status != "" && t.Status != store.TemplateReady
	})
	for _, t := range ready {
		if t.ID == setting {
			return setting
		}
	}
	for _, t := range ready {
		if t.IsDefault {
			return t.ID
		}
	}
	if len(ready) > 0 {
		return ready[0].ID
	}
	return ""
}

func (a *API) listTemplates(w http.ResponseWriter, r *http.Request) error {
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	def := defaultTemplate(ts, a.cfg.Settings().DefaultTemplateID)
	out := wire.TemplateList{Templates: make([]wire.Template, len(ts)), DefaultTemplateID: def}
	for i, t := range ts {
		out.Templates[i] = a.templateJSON(t, def)
	}
	return writeJSON(w, http.StatusOK, out)
}

// oneTemplate writes a template with the default resolved.
func (a *API) oneTemplate(w http.ResponseWriter, r *http.Request, status int, t store.Template) error {
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, status, a.templateJSON(t, defaultTemplate(ts, a.cfg.Settings().DefaultTemplateID)))
}

func (a *API) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := a.st.GetTemplate(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return a.oneTemplate(w, r, http.StatusOK, t)
}

// manager returns the template manager, or an unsupported error.
func (a *API) manager() (*template.Manager, error) {
	if a.cfg.Templates == nil {
		return nil, errdefs.Unsupportedf("this helper does not manage templates")
	}
	return a.cfg.Templates, nil
}

func (a *API) listManifests(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	out := wire.ManifestList{Manifests: []wire.Manifest{}}
	for _, name := range template.BuiltinNames() {
		man, err := template.Builtin(name)
		if err != nil {
			return err
		}
		wm := wire.Manifest{Name: man.Name, Version: man.Version, DisplayName: man.DisplayName, Description: man.Description,
			OS: man.OS, Kind: man.Kind, Supported: m.Supports(man)}
		if man.RootFS != nil {
			for k := range man.RootFS.Extras {
				wm.Extras = append(wm.Extras, k)
			}
			slices.Sort(wm.Extras)
		}
		out.Manifests = append(out.Manifests, wm)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) createTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	var body wire.CreateTemplate
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if err := a.stepUpForTemplate(r, "", ""); err != nil {
		return err
	}
	var t store.Template
	switch {
	case body.FromVMID != "" && body.Manifest != "":
		return errdefs.Invalidf("give either manifest (build) or fromVmId (seal), not both")
	case body.FromVMID != "":
		if body.Full || len(body.With) > 0 || body.Mirror != "" || body.RestoreImage != "" || body.Unattended {
			return errdefs.Invalidf("full, with, mirror, restoreImage and unattended are for builds from a manifest")
		}
		t, err = m.Seal(r.Context(), template.SealRequest{VMID: body.FromVMID, Name: body.Name, Description: body.Description})
	case strings.TrimSpace(body.Manifest) != "":
		t, err = m.Create(r.Context(), template.CreateRequest{Manifest: strings.TrimSpace(body.Manifest), Name: body.Name,
			Description: body.Description, Options: template.Options{Full: body.Full, Extras: body.With}, Mirror: body.Mirror,
			RestoreImage: body.RestoreImage, Unattended: body.Unattended})
	default:
		return errdefs.Invalidf("manifest (a name such as linux-desktop, or an absolute folder) or fromVmId is required")
	}
	if err != nil {
		return err
	}
	return a.oneTemplate(w, r, http.StatusAccepted, t)
}

func (a *API) templateLog(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	b, err := m.BuildLog(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, err = w.Write(b)
	return err
}

func (a *API) patchTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	var body wire.TemplatePatch
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if body.Name != nil {
		if err := a.stepUpForTemplate(r, r.PathValue("id"), *body.Name); err != nil {
			return err
		}
	}
	t, err := m.Update(r.Context(), r.PathValue("id"), template.Patch{Name: body.Name, Description: body.Description,
		CPUCount: body.CPUCount, MemoryMB: body.MemoryMB, DiskGB: body.DiskGB})
	if err != nil {
		return err
	}
	a.o.Kick()
	return a.oneTemplate(w, r, http.StatusOK, t)
}

func (a *API) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	if err := m.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) defaultTemplateRoute(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	t, err := m.SetDefault(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	a.o.Kick()
	return a.oneTemplate(w, r, http.StatusOK, t)
}

func (a *API) setupTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	var body wire.TemplateSetupRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &body); err != nil {
			return err
		}
	}
	id := r.PathValue("id")
	steps, err := m.SetupSteps(r.Context(), id)
	if err != nil {
		return err
	}
	t, err := m.Setup(r.Context(), id, template.SetupOptions{Finish: body.Finish, Force: body.Force})
	if err != nil {
		return err
	}
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	out := wire.TemplateSetup{Template: a.templateJSON(t, defaultTemplate(ts, a.cfg.Settings().DefaultTemplateID)), Steps: []wire.SetupStep{}}
	for _, s := range steps {
		out.Steps = append(out.Steps, wire.SetupStep{Title: s.Title, Instructions: s.Instructions})
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) rebuildVM(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := m.RebuildVM(r.Context(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]string{"removed": id, "message": "the VM was removed; the warm pool boots a fresh clone of its template"})
}
