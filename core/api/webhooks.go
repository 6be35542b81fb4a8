package api

import (
	"net/http"
	"strings"
	"unicode"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/webhooks"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Webhooks (issue 20, extension). A webhook sends what tasks do to an
// address of the user's choosing, so adding or testing one needs what
// adding a credential needs: an API key, or a web session that signed in a
// moment ago. Its signing secret goes to the secret store and is never
// answered; its address is answered without its path and query.

func webhookJSON(w store.Webhook) wire.Webhook {
	return wire.Webhook{ID: w.ID, Name: w.Name, URL: webhooks.Redact(w.URL), Format: w.Format, Events: nonNil(w.Events),
		HasSecret: w.HasSecret, Enabled: w.Enabled, CreatedAt: ts(w.CreatedAt)}
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	ws, err := a.st.ListWebhooks(r.Context())
	if err != nil {
		return err
	}
	out := wire.WebhookList{Webhooks: make([]wire.Webhook, len(ws))}
	for i, h := range ws {
		out.Webhooks[i] = webhookJSON(h)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Adding a webhook"); err != nil {
		return err
	}
	var in wire.WebhookInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 100 || strings.ContainsFunc(in.Name, unicode.IsControl) {
		return errdefs.Invalidf("a webhook needs a name of 1 to 100 characters")
	}
	if err := webhooks.CheckURL(in.URL); err != nil {
		return errdefs.Invalidf("%v", err)
	}
	format, err := webhooks.CheckFormat(in.Format)
	if err != nil {
		return errdefs.Invalidf("%v", err)
	}
	events, err := webhooks.CheckEvents(in.Events)
	if err != nil {
		return errdefs.Invalidf("%v", err)
	}
	if len(in.Secret) > 1024 {
		return errdefs.Invalidf("the signing secret is too long (at most 1024 bytes)")
	}
	h := store.Webhook{Name: in.Name, URL: in.URL, Format: string(format), Events: make([]string, len(events)),
		HasSecret: in.Secret != "", Enabled: in.Enabled == nil || *in.Enabled}
	for i, e := range events {
		h.Events[i] = string(e)
	}
	if err := a.st.CreateWebhook(r.Context(), &h); err != nil {
		return err
	}
	if in.Secret != "" {
		if err := a.cfg.Secrets.Set(h.SecretRef(), in.Secret); err != nil {
			// No half-made webhook: without its secret it goes.
			a.st.DeleteWebhook(r.Context(), h.ID)
			return errdefs.Unavailablef("store the webhook's signing secret: %v", err)
		}
	}
	return writeJSON(w, http.StatusCreated, webhookJSON(h))
}

// switchWebhook turns a webhook on (step-up: it sends task data to an
// address) or off.
func (a *API) switchWebhook(w http.ResponseWriter, r *http.Request) error {
	on, err := decodeSwitch(w, r, "a webhook", "webhook")
	if err != nil {
		return err
	}
	h, err := a.st.SetWebhookEnabled(r.Context(), r.PathValue("id"), on)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, webhookJSON(h))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	h, err := a.st.DeleteWebhook(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if h.HasSecret {
		a.cfg.Secrets.Delete(h.SecretRef())
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testWebhook sends a webhook a test notice, once, and says what its
// receiver answered.
func (a *API) testWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Testing a webhook"); err != nil {
		return err
	}
	h, err := a.st.FindWebhook(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if a.cfg.Webhooks == nil {
		return errdefs.Unavailablef("this helper sends no webhooks")
	}
	status, err := a.cfg.Webhooks.Test(r.Context(), h.ID)
	if err != nil {
		return writeJSON(w, http.StatusOK, wire.WebhookTest{Status: status, Error: err.Error()})
	}
	return writeJSON(w, http.StatusOK, wire.WebhookTest{OK: true, Status: status})
}
