package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// secretRef names a provider's key in the secret store.
func secretRef(id string) string { return "provider/" + id }

func (a *API) providerJSON(p store.Provider) wire.Provider {
	key, _ := a.cfg.APIKey(p)
	return wire.Provider{
		ID: p.ID, DisplayName: p.DisplayName, BaseURL: p.BaseURL, BackendMode: p.BackendMode, AuthMode: p.AuthMode,
		IsDefault: p.IsDefault, HasAPIKey: key != "", DefaultModelID: p.DefaultModelID, OrganizationID: p.OrganizationID,
		TimeoutInterval: float64(p.TimeoutSeconds), DefaultReasoningEffort: p.DefaultReasoningEffort, Type: p.Type, CreatedAt: ts(p.CreatedAt),
	}
}

func (a *API) listProviders(w http.ResponseWriter, r *http.Request) error {
	ps, err := a.st.ListProviders(r.Context())
	if err != nil {
		return err
	}
	out := wire.ProviderList{Providers: make([]wire.Provider, len(ps))}
	for i, p := range ps {
		out.Providers[i] = a.providerJSON(p)
	}
	return writeJSON(w, http.StatusOK, out)
}

// findProvider finds a provider by ID or display name.
func (a *API) findProvider(ctx context.Context, idOrName string) (store.Provider, error) {
	if idOrName == "" {
		return store.Provider{}, errdefs.NotFoundf("provider not found")
	}
	return a.st.FindProvider(ctx, idOrName)
}

func (a *API) getProvider(w http.ResponseWriter, r *http.Request) error {
	p, err := a.findProvider(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, a.providerJSON(p))
}

// applyProvider copies the given fields of in onto p. The store fills
// what a provider's type implies (checkProvider): a new type takes what
// followed the old one, a base URL that was the old type's vendor default
// and a backend mode, unless in gives them.
func applyProvider(p *store.Provider, in wire.ProviderInput) error {
	if in.DisplayName != nil {
		p.DisplayName = *in.DisplayName
	}
	if in.Type != nil {
		t, err := llm.NormalizeType(*in.Type)
		if err != nil {
			return err
		}
		if t != p.Type {
			if in.BaseURL == nil && p.BaseURL == llm.DefaultBaseURL(p.Type) {
				p.BaseURL = ""
			}
			if in.BackendMode == nil {
				p.BackendMode = ""
			}
		}
		p.Type = t
	}
	if in.BaseURL != nil {
		p.BaseURL = strings.TrimRight(strings.TrimSpace(*in.BaseURL), "/")
	}
	if in.ClearBaseURL != nil && *in.ClearBaseURL {
		// Swift falls back to its built-in address; so does an anthropic
		// or openai provider (its vendor's), while the store refuses an
		// openai-compatible one without an address.
		p.BaseURL = ""
	}
	if in.OrganizationID != nil {
		p.OrganizationID = strings.TrimSpace(*in.OrganizationID)
	}
	if in.ClearOrganizationID != nil && *in.ClearOrganizationID {
		p.OrganizationID = ""
	}
	if in.AuthMode != nil && *in.AuthMode != "api_key" {
		return errdefs.Invalidf("authMode %q: Hivecrew signs in to providers with an API key only (api_key)", *in.AuthMode)
	}
	if in.BackendMode != nil {
		p.BackendMode = *in.BackendMode
	}
	if in.IsDefault != nil {
		p.IsDefault = *in.IsDefault
	}
	if in.DefaultModelID != nil {
		p.DefaultModelID = strings.TrimSpace(*in.DefaultModelID)
	}
	if in.TimeoutInterval != nil {
		if *in.TimeoutInterval < 0 || *in.TimeoutInterval > 3600 {
			return errdefs.Invalidf("timeoutInterval %g: want 0..3600 seconds", *in.TimeoutInterval)
		}
		p.TimeoutSeconds = int(*in.TimeoutInterval)
	}
	if in.DefaultReasoningEffort != nil {
		effort := strings.TrimSpace(*in.DefaultReasoningEffort)
		if err := orchestrator.CheckReasoningEffort(effort); err != nil {
			return errdefs.Invalidf("defaultReasoningEffort %q: want one of %s, or \"\" for the model's default", effort, strings.Join(orchestrator.ReasoningEfforts, ", "))
		}
		p.DefaultReasoningEffort = effort
	}
	if in.APIKey != nil && strings.ContainsAny(*in.APIKey, "\r\n") {
		return errdefs.Invalidf("apiKey must be one line")
	}
	return nil
}

func (a *API) createProvider(w http.ResponseWriter, r *http.Request) error {
	var in wire.ProviderInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	var p store.Provider
	if err := applyProvider(&p, in); err != nil {
		return err
	}
	if err := requireStepUp(r, "Adding a provider"); err != nil {
		return err
	}
	if err := a.st.CreateProvider(r.Context(), &p); err != nil {
		return err
	}
	if in.APIKey != nil && strings.TrimSpace(*in.APIKey) != "" {
		if err := a.cfg.Secrets.Set(secretRef(p.ID), strings.TrimSpace(*in.APIKey)); err != nil {
			// No provider without the key the user gave.
			if _, derr := a.st.DeleteProvider(context.WithoutCancel(r.Context()), p.ID); derr != nil {
				err = errors.Join(err, derr)
			}
			return fmt.Errorf("store the API key: %w", err)
		}
	}
	return writeJSON(w, http.StatusCreated, a.providerJSON(p))
}

func (a *API) patchProvider(w http.ResponseWriter, r *http.Request) error {
	var in wire.ProviderInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	old, err := a.findProvider(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	// A key, or an address or protocol its key would be sent to (clearing
	// the address sends it to the type's vendor).
	clearsURL := in.ClearBaseURL != nil && *in.ClearBaseURL && old.BaseURL != ""
	if in.APIKey != nil || in.BaseURL != nil || clearsURL || typeChange(old, in) {
		if err := requireStepUp(r, "Changing a provider's API key, address or type"); err != nil {
			return err
		}
	}
	p, err := a.st.UpdateProvider(r.Context(), old.ID, func(p *store.Provider) error { return applyProvider(p, in) })
	if err != nil {
		return err
	}
	if in.APIKey == nil && in.ClearAPIKey != nil && *in.ClearAPIKey {
		if err := a.cfg.Secrets.Delete(secretRef(p.ID)); err != nil {
			return fmt.Errorf("delete the API key: %w", err)
		}
	}
	if in.APIKey != nil {
		key := strings.TrimSpace(*in.APIKey)
		if key == "" {
			err = a.cfg.Secrets.Delete(secretRef(p.ID))
		} else {
			err = a.cfg.Secrets.Set(secretRef(p.ID), key)
		}
		if err != nil {
			return fmt.Errorf("store the API key: %w", err)
		}
	}
	return writeJSON(w, http.StatusOK, a.providerJSON(p))
}

// typeChange says whether in changes p's type (an invalid type is
// refused by applyProvider).
func typeChange(p store.Provider, in wire.ProviderInput) bool {
	if in.Type == nil {
		return false
	}
	t, err := llm.NormalizeType(*in.Type)
	return err == nil && t != p.Type
}

func (a *API) deleteProvider(w http.ResponseWriter, r *http.Request) error {
	old, err := a.findProvider(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := a.st.DeleteProvider(r.Context(), old.ID); err != nil {
		return err
	}
	if err := a.cfg.Secrets.Delete(secretRef(old.ID)); err != nil {
		a.cfg.Log.Error("delete API key of a deleted provider", "provider", old.ID, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// providerClient returns a client of a provider (for listing models and
// testing it), with one quick attempt.
func (a *API) providerClient(ctx context.Context, id string) (store.Provider, *llm.Client, error) {
	p, err := a.findProvider(ctx, id)
	if err != nil {
		return p, nil, err
	}
	key, err := a.cfg.APIKey(p)
	if err != nil {
		return p, nil, err
	}
	c, err := llm.New(llm.Config{Type: p.Type, BaseURL: p.BaseURL, APIKey: key, Model: or(p.DefaultModelID, "test"), Timeout: 20 * time.Second,
		MaxAttempts: 2, BackoffBase: a.cfg.LLMBackoff})
	return p, c, err
}

func (a *API) providerModels(w http.ResponseWriter, r *http.Request) error {
	_, c, err := a.providerClient(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	models, err := c.Models(r.Context())
	if err != nil {
		// The provider failed, not the helper: 502, as Swift.
		return errdefs.New(errBadGateway, "list models: "+err.Error())
	}
	out := wire.ModelList{Models: make([]wire.Model, len(models))}
	for i, m := range models {
		out.Models[i] = wire.Model{ID: m.ID, Name: or(m.Name, m.ID),
			ReasoningCapability: wire.ReasoningCapability{Kind: m.Reasoning.Kind, SupportedEfforts: m.Reasoning.Efforts}, SupportsVision: m.Vision}
		if m.ContextLength > 0 {
			out.Models[i].ContextLength = &m.ContextLength
		}
		if m.Reasoning.Kind == "effort" {
			def := "medium"
			out.Models[i].ReasoningCapability.DefaultEffort = &def
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// testProvider checks that the provider answers with the stored key.
func (a *API) testProvider(w http.ResponseWriter, r *http.Request) error {
	p, c, err := a.providerClient(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	start := time.Now()
	if p.DefaultModelID != "" {
		err = c.Test(r.Context())
	} else {
		_, err = c.Models(r.Context())
	}
	out := wire.ProviderTest{OK: err == nil, Message: "The provider answered.", LatencyMs: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		out.Message = err.Error()
	}
	return writeJSON(w, http.StatusOK, out)
}
