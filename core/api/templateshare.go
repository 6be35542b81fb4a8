package api

import (
	"fmt"
	"net/http"

	"github.com/hivecrew/hivecrew/core/template"
)

// templateShareRoutes registers export, import and Update agent.
//
//	GET  /api/v1/templates/{id}/export        the template as one archive (application/zstd)
//	POST /api/v1/templates/import?name=N      body: an archive; 201 with the new template
//	POST /api/v1/templates/{id}/update-agent  install the helper's guest agent and reseal
func (a *API) templateShareRoutes(h func(pattern string, f handlerFunc)) {
	h("GET /api/v1/templates/{id}/export", a.exportTemplate)
	h("POST /api/v1/templates/import", a.importTemplate)
	h("POST /api/v1/templates/{id}/update-agent", a.updateTemplateAgent)
}

// ArchiveType is the media type of a template archive.
const ArchiveType = "application/zstd"

// startedWriter notes whether anything was written: until then a failure
// is answered as a JSON error.
type startedWriter struct {
	w       http.ResponseWriter
	id      string
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", ArchiveType)
		s.w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.hivecrew-template"`, s.id))
		s.w.Header().Set("Cache-Control", "no-store")
	}
	return s.w.Write(p)
}

func (a *API) exportTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := a.st.GetTemplate(r.Context(), id); err != nil {
		return err
	}
	sw := &startedWriter{w: w, id: id}
	if _, err := m.Export(r.Context(), id, sw); err != nil {
		if !sw.started {
			return err
		}
		// Half an archive went out: the connection is cut, so that the
		// client sees a failed download, never a short file that looks
		// whole.
		a.cfg.Log.Warn("template export cut short", "template", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (a *API) importTemplate(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	if err := a.stepUpForTemplate(r, "", ""); err != nil {
		return err
	}
	t, err := m.Import(r.Context(), template.ImportRequest{Archive: r.Body, Name: r.URL.Query().Get("name")})
	if err != nil {
		return err
	}
	a.o.Kick()
	return a.oneTemplate(w, r, http.StatusCreated, t)
}

func (a *API) updateTemplateAgent(w http.ResponseWriter, r *http.Request) error {
	m, err := a.manager()
	if err != nil {
		return err
	}
	t, err := m.UpdateAgent(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	a.o.Kick()
	return a.oneTemplate(w, r, http.StatusOK, t)
}
