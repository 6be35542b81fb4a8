package api

import (
	"net/http"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// templateRoutes registers the template endpoints.
func (a *API) templateRoutes(h func(pattern string, f handlerFunc)) {
	h("GET /api/v1/templates", a.listTemplates)
	h("GET /api/v1/templates/{id}", a.getTemplate)
}

func templateJSON(t store.Template, def string) wire.Template {
	return wire.Template{ID: t.ID, Name: t.Name, Description: t.Description, IsDefault: t.ID == def, CPUCount: t.CPUCount,
		MemoryMB: t.MemoryMB, DiskGB: t.DiskGB, OS: t.OS, Kind: t.Kind, AgentVersion: t.AgentVersion, CreatedAt: t.CreatedAt}
}

// defaultTemplate is the template new tasks use: the setting, else the one
// marked default, else the first.
func defaultTemplate(ts []store.Template, setting string) string {
	for _, t := range ts {
		if t.ID == setting {
			return setting
		}
	}
	for _, t := range ts {
		if t.IsDefault {
			return t.ID
		}
	}
	if len(ts) > 0 {
		return ts[0].ID
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
		out.Templates[i] = templateJSON(t, def)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) getTemplate(w http.ResponseWriter, r *http.Request) error {
	t, err := a.st.GetTemplate(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, templateJSON(t, defaultTemplate(ts, a.cfg.Settings().DefaultTemplateID)))
}
