package api

import (
	"encoding/base32"
	"net/http"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Credentials (issue 19.1, extension): logins the agent types without
// seeing them. The password and the TOTP seed go to the secret store
// (keychain, Secret Service or the 0600 file) and are never answered;
// the database keeps the name, the username and where it may be typed.

func (a *API) credentialJSON(c store.Credential) wire.Credential {
	pw, _ := c.SecretRefs()
	has, _ := a.cfg.Secrets.Get(pw)
	out := wire.Credential{ID: c.ID, Name: c.Name, Username: c.Username, HasPassword: has != "", HasTOTP: c.HasTOTP,
		AllowedApps: []string{}, CreatedAt: ts(c.CreatedAt)}
	for _, app := range strings.Split(c.AllowedApps, ",") {
		if app = strings.TrimSpace(app); app != "" {
			out.AllowedApps = append(out.AllowedApps, app)
		}
	}
	return out
}

func (a *API) listCredentials(w http.ResponseWriter, r *http.Request) error {
	cs, err := a.st.ListCredentials(r.Context())
	if err != nil {
		return err
	}
	out := wire.CredentialList{Credentials: make([]wire.Credential, len(cs))}
	for i, c := range cs {
		out.Credentials[i] = a.credentialJSON(c)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) createCredential(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Adding a credential"); err != nil {
		return err
	}
	var in wire.CredentialInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.Password == "" && in.TOTPSeed == "" {
		return errdefs.Invalidf("a credential needs a password or a totpSeed (or both)")
	}
	if strings.ContainsAny(in.Password, "\r\n") || len(in.Password) > 4096 || len(in.Username) > 512 {
		return errdefs.Invalidf("password: one line of at most 4096 bytes; username: at most 512 bytes")
	}
	seed := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(in.TOTPSeed), " ", ""))
	if seed != "" {
		if _, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.TrimRight(seed, "=")); err != nil {
			return errdefs.Invalidf("totpSeed: not a base32 secret (as authenticator apps show it): %v", err)
		}
	}
	var apps []string
	for _, app := range in.AllowedApps {
		if app = strings.TrimSpace(app); app != "" {
			if strings.ContainsAny(app, ",\r\n") || len(app) > 128 {
				return errdefs.Invalidf("allowedApps %q: an application name, without commas", app)
			}
			apps = append(apps, app)
		}
	}
	c := store.Credential{Name: in.Name, Username: strings.TrimSpace(in.Username), AllowedApps: strings.Join(apps, ","), HasTOTP: seed != ""}
	if err := a.st.CreateCredential(r.Context(), &c); err != nil {
		return err
	}
	pw, totp := c.SecretRefs()
	for ref, v := range map[string]string{pw: in.Password, totp: seed} {
		if v == "" {
			continue
		}
		if err := a.cfg.Secrets.Set(ref, v); err != nil {
			// No half-made credential: without its secret it goes.
			a.st.DeleteCredential(r.Context(), c.ID)
			a.cfg.Secrets.Delete(pw)
			a.cfg.Secrets.Delete(totp)
			return errdefs.Unavailablef("store the credential's secret: %v", err)
		}
	}
	return writeJSON(w, http.StatusCreated, a.credentialJSON(c))
}

func (a *API) deleteCredential(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Removing a credential"); err != nil {
		return err
	}
	c, err := a.st.DeleteCredential(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	pw, totp := c.SecretRefs()
	a.cfg.Secrets.Delete(pw)
	a.cfg.Secrets.Delete(totp)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
