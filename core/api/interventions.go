package api

import (
	"net/http"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

func (a *API) question(w http.ResponseWriter, r *http.Request) error {
	t, err := a.fullTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	if t.PendingQuestion == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return writeJSON(w, http.StatusOK, t.PendingQuestion)
}

func (a *API) answer(w http.ResponseWriter, r *http.Request) error {
	var body wire.Answer
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if body.QuestionID == "" || strings.TrimSpace(body.Answer) == "" {
		return errdefs.Invalidf("questionId and answer are required")
	}
	if err := a.o.Answer(r.Context(), r.PathValue("id"), body.QuestionID, body.Answer); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) permission(w http.ResponseWriter, r *http.Request) error {
	t, err := a.fullTask(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	if t.PendingPermission == nil {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return writeJSON(w, http.StatusOK, t.PendingPermission)
}

func (a *API) respond(w http.ResponseWriter, r *http.Request) error {
	var body wire.PermissionResponse
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if body.PermissionID == "" || body.Approved == nil {
		return errdefs.Invalidf("permissionId and approved are required")
	}
	if err := a.o.Respond(r.Context(), r.PathValue("id"), body.PermissionID, *body.Approved); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) instructions(w http.ResponseWriter, r *http.Request) error {
	var body wire.Instructions
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if err := a.o.Instruct(r.Context(), r.PathValue("id"), body.Text); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *API) takeover(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var body wire.Takeover
	if err := decode(w, r, &body); err != nil {
		return err
	}
	var err error
	switch {
	case body.Action == "start" && body.Native:
		err = a.o.ShowVM(r.Context(), id)
	case body.Action == "start":
		err = a.o.TakeOver(r.Context(), id)
	case body.Action == "end":
		err = a.o.HandBack(r.Context(), id, body.Instructions)
	default:
		return errdefs.Invalidf("action %q: want start or end", body.Action)
	}
	if err != nil {
		return err
	}
	return a.writeTask(w, r, http.StatusOK, id)
}

func (a *API) input(w http.ResponseWriter, r *http.Request) error {
	var body wire.Input
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if err := a.o.Input(r.Context(), r.PathValue("id"), body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
