package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
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
		if origin := r.Header.Get("Origin"); origin != "" && !thisSite(origin, r.Host) {
			WriteError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("cross-site request from Origin %q refused", origin))
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			WriteError(w, http.StatusForbidden, "forbidden", "cross-site request refused")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && !public(r) {
			var ok bool
			if r, ok = a.signedIn(w, r, r.URL.Path == mcpPath); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// signedIn authenticates r (see authenticate) and returns it with its
// web session, if any, in its context; or answers the refusal and
// returns false.
func (a *API) signedIn(w http.ResponseWriter, r *http.Request, strict bool) (*http.Request, bool) {
	sess, status, err := a.authenticate(r, strict)
	if err != nil {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hivecrew"`)
		}
		code := "unauthorized"
		if status == http.StatusForbidden {
			code = "forbidden"
		}
		WriteError(w, status, code, err.Error())
		return r, false
	}
	if sess != nil {
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
	}
	return r, true
}

// thisSite says whether an Origin header names the site of host.
func thisSite(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == host && (u.Scheme == "http" || u.Scheme == "https")
}

// SessionHeader carries a web session's token on state-changing requests.
// The token reaches the page only in the login redirect's fragment, which
// the browser keeps from every server, and lives in the page's own
// storage, which no other origin (another localhost port included) can
// read: a session cookie alone, which browsers send to every port of
// localhost, is never a key.
const SessionHeader = "X-Hivecrew-Session"

// webSession is a browser's session, by its cookie: a login link's, or a
// paired device's.
type webSession struct {
	expires, lastSeen time.Time
	// token must come with state-changing requests (SessionHeader); a
	// paired device has none and must come from this site instead.
	token string
	// stepUpUntil ends the window in which the session may change API
	// keys, providers' keys and addresses, and safety settings.
	stepUpUntil time.Time
	// device is a paired device's id ("" for a login link's session);
	// cookie is the session's cookie value.
	device, cookie string
}

type sessionKey struct{}

// authenticate accepts a bearer API key, a web session cookie (with its
// header token when the request changes anything, or whatever it does
// when strict), or a paired device's cookie (from this site:
// authenticateDevice). It returns the session for a cookie, and the
// status to answer when it refuses.
func (a *API) authenticate(r *http.Request, strict bool) (*webSession, int, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		key, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, http.StatusUnauthorized, fmt.Errorf("Authorization: want \"Bearer hc_...\"")
		}
		if _, err := a.st.VerifyAPIKey(r.Context(), strings.TrimSpace(key)); err != nil {
			return nil, http.StatusUnauthorized, fmt.Errorf("API key refused: %w", err)
		}
		return nil, 0, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil, http.StatusUnauthorized, fmt.Errorf("an API key is required: send \"Authorization: Bearer hc_...\" (create one with `hivecrew apikey create`), or, from another device, pair it through this machine's network address (POST /api/v1/auth/pair/request); on this machine, `hivecrew open` signs the web UI in")
	}
	if strings.HasPrefix(c.Value, store.DeviceTokenPrefix) {
		return a.authenticateDevice(r, c.Value, strict)
	}
	sess, ok := a.session(c.Value)
	if !ok {
		return nil, http.StatusUnauthorized, fmt.Errorf("this web session has expired or was never valid: run `hivecrew open` for a new login link")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if !strict {
			break
		}
		fallthrough
	default:
		if got := r.Header.Get(SessionHeader); subtle.ConstantTimeCompare([]byte(got), []byte(sess.token)) != 1 {
			return nil, http.StatusForbidden, fmt.Errorf("a session cookie alone cannot change anything: the request needs the page's session token in %s (reload the page, or run `hivecrew open` for a new login link)", SessionHeader)
		}
	}
	return sess, 0, nil
}

// requireStepUp refuses a web session's request to change what more than
// a session should (what), unless its login link was opened in the last
// stepUpWindow. API keys and the unix socket need no step-up.
func requireStepUp(r *http.Request, what string) error {
	if !stale(r) {
		return nil
	}
	if sessionOf(r).device != "" {
		return errdefs.New(errStepUp, what+" needs a fresh sign-in, and this paired device's came with its approval: do it on the desktop (`hivecrew open`), or sign this device out, pair it again and try again within a few minutes of the approval")
	}
	return errdefs.New(errStepUp, what+" needs a fresh sign-in: run `hivecrew open` (or choose Open in the menu bar), use the new link, and try again within a few minutes")
}

// stale says whether r comes from a web session whose step-up window has
// passed.
func stale(r *http.Request) bool {
	sess := sessionOf(r)
	return sess != nil && !time.Now().Before(sess.stepUpUntil)
}

// localPath returns next when it is a path on this site (the page a login
// link opens), else "/". Refused: anything that is not an absolute path,
// a second slash or a backslash after the first (a browser reads "//x" and
// "/\\x" as another host), control, formatting or invalid characters
// (browsers drop tabs and newlines, so "/\t/evil.com" becomes
// "//evil.com"), and any of these hidden under percent-encoding.
func localPath(next string) string {
	decoded := next
	for range 3 {
		d, err := url.PathUnescape(decoded)
		if err != nil {
			return "/"
		}
		if d == decoded {
			break
		}
		decoded = d
	}
	for _, p := range []string{next, decoded} {
		if !strings.HasPrefix(p, "/") || len(p) > 1 && (p[1] == '/' || p[1] == '\\') || strings.Contains(p, "\\") || !utf8.ValidString(p) {
			return "/"
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) && r != ' ' {
				return "/"
			}
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return next
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// session returns the live session of a cookie and marks it used; an
// expired or idle one is forgotten.
func (a *API) session(cookie string) (*webSession, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sess, ok := a.sessions[cookie]
	if !ok {
		return nil, false
	}
	now := time.Now()
	if now.After(sess.expires) || now.Sub(sess.lastSeen) > webSessionIdle {
		delete(a.sessions, cookie)
		return nil, false
	}
	sess.lastSeen = now
	cp := *sess
	cp.cookie = cookie
	return &cp, true
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
	session, now := newToken(), time.Now()
	sess := &webSession{expires: now.Add(webSessionTTL), lastSeen: now, token: newToken(), stepUpUntil: now.Add(a.cfg.StepUpWindow)}
	a.mu.Lock()
	for c, s := range a.sessions {
		if now.After(s.expires) || now.Sub(s.lastSeen) > webSessionIdle {
			delete(a.sessions, c)
		}
	}
	a.sessions[session] = sess
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(webSessionTTL.Seconds())})
	// The page takes the session token from the fragment (never sent to a
	// server) into its own storage, and removes it from the address bar.
	w.Header().Set("Referrer-Policy", "no-referrer")
	next, _, _ := strings.Cut(localPath(r.URL.Query().Get("next")), "#")
	http.Redirect(w, r, next+"#session="+sess.token, http.StatusSeeOther)
	return nil
}
