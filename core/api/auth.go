package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// guard checks TCP requests: the Host names this machine (unless remote
// access is on), the Origin is this site, and /api/ requests carry a valid
// bearer key or web session.
func (a *API) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.cfg.Settings().AllowRemoteAccess && !loopbackHost(r.Host) {
			WriteError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("Host %q is not this machine (enable remote access in Settings to allow it)", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || u.Host != r.Host || (u.Scheme != "http" && u.Scheme != "https") {
				WriteError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("cross-site request from Origin %q refused", origin))
				return
			}
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			WriteError(w, http.StatusForbidden, "forbidden", "cross-site request refused")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			if err := a.authenticate(r); err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="hivecrew"`)
				WriteError(w, http.StatusUnauthorized, "unauthorized", err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate accepts a bearer API key or a web session cookie.
func (a *API) authenticate(r *http.Request) error {
	if h := r.Header.Get("Authorization"); h != "" {
		key, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return fmt.Errorf("Authorization: want \"Bearer hc_...\"")
		}
		if _, err := a.st.VerifyAPIKey(r.Context(), strings.TrimSpace(key)); err != nil {
			return fmt.Errorf("API key refused: %w", err)
		}
		return nil
	}
	if c, err := r.Cookie(sessionCookie); err == nil && a.validSession(c.Value) {
		return nil
	}
	return fmt.Errorf("an API key is required: send \"Authorization: Bearer hc_...\" (create one with `hivecrew apikey create`)")
}

// localPath returns next when it is a path on this site (the page a login
// link opens), else "/".
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *API) validSession(token string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.sessions[token]
	if ok && time.Now().After(exp) {
		delete(a.sessions, token)
		return false
	}
	return ok
}

// loginLink mints a one-time link that opens the web UI with a session.
func (a *API) loginLink(w http.ResponseWriter, r *http.Request) error {
	token := newToken()
	exp := time.Now().Add(loginLinkTTL)
	a.mu.Lock()
	for t, e := range a.logins {
		if time.Now().After(e) {
			delete(a.logins, t)
		}
	}
	a.logins[token] = exp
	a.mu.Unlock()
	return writeJSON(w, http.StatusOK, wire.LoginLink{
		URL:       a.cfg.BaseURL + "/login?token=" + token,
		ExpiresAt: exp.UTC(),
	})
}

// login exchanges a one-time token for an HttpOnly session cookie and goes
// to the dashboard.
func (a *API) login(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("token")
	a.mu.Lock()
	exp, ok := a.logins[token]
	delete(a.logins, token)
	a.mu.Unlock()
	if !ok || time.Now().After(exp) {
		return errdefs.New(errUnauthorized, "this login link is unknown, used or expired: run `hivecrew open` for a new one")
	}
	session := newToken()
	a.mu.Lock()
	a.sessions[session] = time.Now().Add(webSessionTTL)
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(webSessionTTL.Seconds())})
	http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
	return nil
}
