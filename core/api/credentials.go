package api

import (
	"context"
	"encoding/base32"
	"net/http"
	"strings"

	"github.com/hivecrew/hivecrew/core/credimport"
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
	seed, apps, err := credentialFields(in.Username, in.Password, in.TOTPSeed, in.AllowedApps)
	if err != nil {
		return err
	}
	c := store.Credential{Name: in.Name, Username: strings.TrimSpace(in.Username), AllowedApps: apps, HasTOTP: seed != ""}
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

// credentialFields checks a credential's fields as they will be: it needs
// a password or a TOTP seed; the seed is returned as stored (upper case,
// no spaces) and the applications joined by commas.
func credentialFields(username, password, totpSeed string, allowedApps []string) (seed, apps string, err error) {
	if password == "" && totpSeed == "" {
		return "", "", errdefs.Invalidf("a credential needs a password or a totpSeed (or both)")
	}
	if strings.ContainsAny(password, "\r\n") || len(password) > 4096 || len(username) > 512 {
		return "", "", errdefs.Invalidf("password: one line of at most 4096 bytes; username: at most 512 bytes")
	}
	seed = strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(totpSeed), " ", ""))
	if seed != "" {
		if _, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.TrimRight(seed, "=")); err != nil {
			return "", "", errdefs.Invalidf("totpSeed: not a base32 secret (as authenticator apps show it): %v", err)
		}
	}
	var list []string
	for _, app := range allowedApps {
		if app = strings.TrimSpace(app); app != "" {
			if strings.ContainsAny(app, ",\r\n") || len(app) > 128 {
				return "", "", errdefs.Invalidf("allowedApps %q: an application name, without commas", app)
			}
			list = append(list, app)
		}
	}
	return seed, strings.Join(list, ","), nil
}

// updateCredential changes a credential: each field given replaces the
// stored one; password or totpSeed "" removes it (one of them stays).
func (a *API) updateCredential(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Changing a credential"); err != nil {
		return err
	}
	var in wire.CredentialPatch
	if err := decode(w, r, &in); err != nil {
		return err
	}
	old, err := a.st.FindCredential(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	pwRef, totpRef := old.SecretRefs()
	password, _ := a.cfg.Secrets.Get(pwRef)
	seed, _ := a.cfg.Secrets.Get(totpRef)
	next := old
	next.Name = deref(in.Name, old.Name)
	next.Username = strings.TrimSpace(deref(in.Username, old.Username))
	password, seed = deref(in.Password, password), deref(in.TOTPSeed, seed)
	apps := strings.Split(old.AllowedApps, ",")
	if in.AllowedApps != nil {
		apps = *in.AllowedApps
	}
	if seed, next.AllowedApps, err = credentialFields(next.Username, password, seed, apps); err != nil {
		return err
	}
	next.HasTOTP = seed != ""
	if err := a.st.UpdateCredential(r.Context(), next); err != nil {
		return err
	}
	for _, sec := range []struct {
		given      *string
		ref, value string
	}{{in.Password, pwRef, password}, {in.TOTPSeed, totpRef, seed}} {
		if sec.given == nil {
			continue
		}
		err := a.cfg.Secrets.Delete(sec.ref)
		if sec.value != "" {
			err = a.cfg.Secrets.Set(sec.ref, sec.value)
		}
		if err != nil {
			a.st.UpdateCredential(context.WithoutCancel(r.Context()), old)
			return errdefs.Unavailablef("store the credential's secret: %v", err)
		}
	}
	return writeJSON(w, http.StatusOK, a.credentialJSON(next))
}

// importCredentials stores the logins of a browser's password export (the
// CSV file as the body): every row, or none when one cannot be taken,
// with the row's line in the error. No answer or error holds a secret.
func (a *API) importCredentials(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Importing credentials"); err != nil {
		return err
	}
	logins, err := credimport.Parse(http.MaxBytesReader(w, r.Body, credimport.MaxBytes+1))
	if err != nil {
		return errdefs.Invalidf("%v", err)
	}
	have, err := a.st.ListCredentials(r.Context())
	if err != nil {
		return err
	}
	taken := map[string]bool{}
	for _, c := range have {
		taken[c.Name] = true
	}
	cs := make([]*store.Credential, len(logins))
	seeds := make([]string, len(logins))
	for i, l := range logins {
		if taken[l.Name] {
			return errdefs.Conflictf("line %d: a credential named %q exists already: remove it, or rename the row", l.Line, l.Name)
		}
		if seeds[i], _, err = credentialFields(l.Username, l.Password, l.TOTPSeed, nil); err != nil {
			return errdefs.Invalidf("line %d: %v", l.Line, err)
		}
		cs[i] = &store.Credential{Name: l.Name, Username: l.Username, HasTOTP: seeds[i] != ""}
	}
	if err := a.st.CreateCredentials(r.Context(), cs); err != nil {
		return err
	}
	out := wire.CredentialList{Credentials: make([]wire.Credential, len(cs))}
	for i, c := range cs {
		pw, totp := c.SecretRefs()
		for ref, v := range map[string]string{pw: logins[i].Password, totp: seeds[i]} {
			if v == "" {
				continue
			}
			if err := a.cfg.Secrets.Set(ref, v); err != nil {
				// Nothing half-imported: every credential of the file goes.
				a.forgetCredentials(context.WithoutCancel(r.Context()), cs)
				return errdefs.Unavailablef("store the secrets of line %d: %v", logins[i].Line, err)
			}
		}
		out.Credentials[i] = a.credentialJSON(*c)
	}
	return writeJSON(w, http.StatusCreated, out)
}

// forgetCredentials deletes credentials and their secrets.
func (a *API) forgetCredentials(ctx context.Context, cs []*store.Credential) {
	for _, c := range cs {
		a.st.DeleteCredential(ctx, c.ID)
		pw, totp := c.SecretRefs()
		a.cfg.Secrets.Delete(pw)
		a.cfg.Secrets.Delete(totp)
	}
}

// deref is *p, or def when p is nil.
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
