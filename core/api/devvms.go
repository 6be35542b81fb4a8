package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/hivecrew/hivecrew/core/devvm"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// devVMRoutes registers developer VMs (DELETE /vms/:id removes one).
//
//	POST /api/v1/vms               {templateId} → 201, a developer VM of the template
//	GET  /api/v1/vms/{id}/stream   its screen, multipart JPEG
//	POST /api/v1/vms/{id}/input    one pointer or keyboard event → 204
func (a *API) devVMRoutes(h func(pattern string, f handlerFunc)) {
	h("POST /api/v1/vms", a.openDevVM)
	h("GET /api/v1/vms/{id}/stream", a.devVMStream)
	h("POST /api/v1/vms/{id}/input", a.devVMInput)
}

// devVMs returns the developer VM manager, or an unsupported error.
func (a *API) devVMs() (*devvm.Manager, error) {
	if a.cfg.DevVMs == nil {
		return nil, errdefs.Unsupportedf("this helper does not run developer VMs")
	}
	return a.cfg.DevVMs, nil
}

func (a *API) openDevVM(w http.ResponseWriter, r *http.Request) error {
	m, err := a.devVMs()
	if err != nil {
		return err
	}
	var body wire.OpenVM
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if strings.TrimSpace(body.TemplateID) == "" {
		return errdefs.Invalidf("templateId is required")
	}
	v, err := m.Open(r.Context(), strings.TrimSpace(body.TemplateID))
	if err != nil {
		return err
	}
	for _, info := range a.cfg.Pool.Snapshot() {
		if info.ID == v.ID {
			return writeJSON(w, http.StatusCreated, wire.VM{ID: v.ID, Backend: info.Backend, TemplateID: v.TemplateID, State: string(info.State),
				CPUCount: info.CPUs, MemoryMB: info.MemoryMB, Network: string(info.Network), Limits: vmLimits(info.Limits),
				CreatedAt: ts(info.Created), AgentVersion: info.AgentVersion, Developer: true, ScreenWidth: v.Screen.Width, ScreenHeight: v.Screen.Height})
		}
	}
	return errdefs.Conflictf("developer VM %s stopped as it started", v.ID)
}

func (a *API) devVMStream(w http.ResponseWriter, r *http.Request) error {
	m, err := a.devVMs()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	return serveFrames(w, r, func(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
		return m.Frame(ctx, id, p)
	})
}

func (a *API) devVMInput(w http.ResponseWriter, r *http.Request) error {
	m, err := a.devVMs()
	if err != nil {
		return err
	}
	var body wire.Input
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if err := m.Input(r.Context(), r.PathValue("id"), body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
