package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pairing"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Device pairing: the auth routes of the Swift app's API
// (Routes/DeviceAuthRoutes.swift), which its web client signs in with.
// A device asks for a code without credentials, the user approves the
// code on the desktop, and the device's next poll receives a session
// cookie of its own. Where ours is stricter than Swift's: GET /auth/check
// checks the credentials it is sent; the device's cookie is a session,
// never a key (the step-up rules hold for it, its window running from its
// approval); a request with that cookie alone is accepted only when the
// browser says it comes from this site (fromThisSite); asking and polling
// are limited (core/pairing); a session is handed out once; and it is
// bound to the network address the device asked, polled and was approved
// from (pairFrom, authenticateDevice).

// Paired devices' sessions: Swift's cookie lasts 180 days; ours also ends
// after 30 days unused.
const (
	deviceSessionTTL  = 180 * 24 * time.Hour
	deviceSessionIdle = 30 * 24 * time.Hour
)

// Public says whether a request (method, path) is one a device makes
// before it has credentials, and needs none: asking for a pairing code,
// polling it, and checking whether it is signed in.
func Public(method, path string) bool {
	switch path {
	case "/api/v1/auth/pair/request":
		return method == http.MethodPost
	case "/api/v1/auth/pair/status", "/api/v1/auth/check":
		return method == http.MethodGet || method == http.MethodHead
	}
	return false
}

func public(r *http.Request) bool { return Public(r.Method, r.URL.Path) }

// fromThisSite refuses a paired device's request unless the browser says
// it comes from a page of this site. The device's cookie is all it sends,
// and browsers send a host's cookies to every port of it and with forms
// other sites post: so a request that changes anything must carry this
// site's Origin (the guard refused any other) or Sec-Fetch-Site:
// same-origin, and none may say it comes from another site or port. A
// read (GET, HEAD) without either header is a navigation or an older
// browser; what it answers, another site cannot read. When strict (the
// MCP endpoint, whose reads are streams another site's page could
// start), a read needs the headers too.
func fromThisSite(r *http.Request, strict bool) error {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	switch {
	case site == "same-site" || site == "cross-site":
		return fmt.Errorf("a paired device's session is accepted only from this site's own pages; this request comes from another (Sec-Fetch-Site: %s)", site)
	case origin != "":
		if !thisSite(origin, r.Host) {
			return fmt.Errorf("cross-site request from Origin %q refused", origin)
		}
		return nil
	case site == "same-origin":
		return nil
	case !strict && (r.Method == http.MethodGet || r.Method == http.MethodHead) && (site == "" || site == "none"):
		return nil
	}
	return fmt.Errorf("a paired device's session changes nothing unless the request says it comes from this site (Origin, or Sec-Fetch-Site: same-origin, as browsers send); scripts use an API key")
}

// authenticateDevice accepts a paired device's session cookie from the
// address the device was paired from (see fromThisSite, too). Browsers
// send a host's cookies to every port of it, so a program on another
// port of the helper's host can receive a device's cookie; replayed from
// any address but the device's, it is refused, and the device's session
// goes on: a replay cannot sign the device out either.
func (a *API) authenticateDevice(r *http.Request, cookie string, strict bool) (*webSession, int, error) {
	from, _ := pairing.AddrOf(r.RemoteAddr)
	d, err := a.st.DeviceSession(r.Context(), cookie, from, deviceSessionIdle)
	switch {
	case errors.Is(err, store.ErrBadDeviceSession):
		return nil, http.StatusUnauthorized, fmt.Errorf("this device's session has ended (signed out, revoked, expired, unused for %d days, or paired before sessions were bound to an address): pair it again", int(deviceSessionIdle.Hours()/24))
	case errors.Is(err, store.ErrDeviceElsewhere):
		a.cfg.Log.Warn("a paired device's cookie sent from another address was refused", "from", from)
		return nil, http.StatusUnauthorized, errors.New("this device's session was paired from another network address: pair it again")
	}
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if err := fromThisSite(r, strict); err != nil {
		return nil, http.StatusForbidden, err
	}
	return &webSession{expires: d.ExpiresAt, lastSeen: d.LastSeenAt, stepUpUntil: d.StepUpUntil, device: d.ID, cookie: cookie}, 0, nil
}

// sessionOf is the web session (a login link's or a device's) r was
// authenticated with; nil for an API key or the unix socket.
func sessionOf(r *http.Request) *webSession {
	sess, _ := r.Context().Value(sessionKey{}).(*webSession)
	return sess
}

// authCheck answers whether the request's credentials are good, never
// 401: a bad key or a dead session is {authenticated: false}.
func (a *API) authCheck(w http.ResponseWriter, r *http.Request) error {
	out := wire.AuthCheck{}
	if sess, _, err := a.authenticate(r, false); err == nil {
		out.Authenticated, out.Method = true, "bearer"
		if sess != nil {
			out.Method = "cookie"
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// authCheckLocal is authCheck on the unix socket, which needs no
// credentials.
func (a *API) authCheckLocal(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, wire.AuthCheck{Authenticated: true})
}

// limited turns a pairing limit into 429 with Retry-After.
func limited(w http.ResponseWriter, err error) error {
	var le *pairing.LimitError
	if !errors.As(err, &le) {
		return err
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(le.RetryAfter.Round(time.Second)/time.Second)+1))
	return errdefs.New(errTooMany, le.Error())
}

// pairFrom is the address a device may pair from: the request's, unless
// it is this machine's loopback (every program here shares it, so the
// device's cookie would be its whole key) or there is none (the unix
// socket).
func pairFrom(r *http.Request) (netip.Addr, error) {
	addr, ok := pairing.AddrOf(r.RemoteAddr)
	switch {
	case !ok:
		return netip.Addr{}, errdefs.New(errForbidden, "a device pairs over the network (TCP), from its own address; the CLI needs no pairing")
	case addr.IsLoopback() || addr.IsUnspecified():
		return netip.Addr{}, errdefs.New(errForbidden, fmt.Sprintf("pairing is refused from a loopback address (%s): every program on the helper's machine shares it, so a paired device's cookie would be its whole key. "+
			"On this machine, open the web UI with `hivecrew open` (a login link) or use an API key (`hivecrew apikey create`); "+
			"pair a phone or another computer through this machine's network address (the helper listening on it, `hivecrew-helper serve --addr`, and remote access on in Settings)", addr))
	}
	return addr, nil
}

// pairRequest gives a device a code to show and a secret id to poll with.
func (a *API) pairRequest(w http.ResponseWriter, r *http.Request) error {
	addr, err := pairFrom(r)
	if err != nil {
		return err
	}
	p, err := a.pairings.Request(addr, r.UserAgent())
	if err != nil {
		return limited(w, err)
	}
	a.cfg.Log.Info("a device asks to pair", "code", p.Code, "device", p.DeviceName, "address", p.Addr)
	return writeJSON(w, http.StatusCreated, wire.PairingRequest{PairingID: p.ID, Code: p.Code,
		ExpiresIn: int(a.pairings.TTL().Seconds()), ExpiresAt: ts(p.ExpiresAt)})
}

// pairStatus answers a device's poll; once its code is approved, the
// answer carries its session cookie (once).
func (a *API) pairStatus(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return errdefs.Invalidf("id: the pairingId of POST /auth/pair/request is required")
	}
	from, _ := pairing.AddrOf(r.RemoteAddr)
	p, err := a.pairings.Status(from, id)
	if errors.Is(err, pairing.ErrOtherAddress) {
		return errdefs.New(errForbidden, "this pairing was asked for from another network address, and its session goes only there: ask for a new code from this one")
	}
	if err != nil {
		return limited(w, err)
	}
	if p.Status != pairing.Approved {
		return writeJSON(w, http.StatusOK, wire.PairingStatus{Status: string(p.Status)})
	}
	token, d, err := a.st.CreateDevice(r.Context(), store.Device{Name: p.DeviceName, UserAgent: p.UserAgent,
		StepUpUntil: p.StepUpUntil, ExpiresAt: time.Now().Add(deviceSessionTTL), Address: p.Addr.String()})
	if err != nil {
		return fmt.Errorf("the pairing %s was approved, but its session could not be made (pair again): %w", p.Code, err)
	}
	a.cfg.Log.Info("device paired", "device", d.ID, "name", d.Name, "address", d.Address)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(deviceSessionTTL.Seconds())})
	return writeJSON(w, http.StatusOK, wire.PairingStatus{Status: string(p.Status), DeviceName: d.Name})
}

// logout ends the request's session: a paired device is forgotten, a
// login link's session ends. With an API key there is nothing to end.
func (a *API) logout(w http.ResponseWriter, r *http.Request) error {
	if sess := sessionOf(r); sess != nil {
		if sess.device != "" {
			if err := a.st.DeleteDevice(r.Context(), sess.device); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
				return err
			}
		} else {
			a.mu.Lock()
			delete(a.sessions, sess.cookie)
			a.mu.Unlock()
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	return writeJSON(w, http.StatusOK, wire.Logout{Status: "logged_out"})
}

// listDevices lists the paired devices.
func (a *API) listDevices(w http.ResponseWriter, r *http.Request) error {
	ds, err := a.st.ListDevices(r.Context())
	if err != nil {
		return err
	}
	out := wire.DeviceList{Devices: make([]wire.Device, 0, len(ds))}
	sess := sessionOf(r)
	for _, d := range ds {
		k := pairing.Describe(d.UserAgent)
		out.Devices = append(out.Devices, wire.Device{ID: d.ID, Name: d.Name, DeviceType: k.Type, Browser: k.Browser, OS: k.OS,
			AuthorizedAt: ts(d.CreatedAt), LastSeenAt: ts(d.LastSeenAt), UserAgent: d.UserAgent, ExpiresAt: ts(d.ExpiresAt),
			Address: d.Address, Current: sess != nil && sess.device == d.ID})
	}
	return writeJSON(w, http.StatusOK, out)
}

// revokeDevice forgets a paired device: its session ends at once.
func (a *API) revokeDevice(w http.ResponseWriter, r *http.Request) error {
	if err := a.st.DeleteDevice(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	a.cfg.Log.Info("device revoked", "device", r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listPairings lists the devices waiting for the user's answer.
func (a *API) listPairings(w http.ResponseWriter, r *http.Request) error {
	ps := a.pairings.Pending()
	out := wire.PairingList{Pairings: make([]wire.Pairing, 0, len(ps))}
	for _, p := range ps {
		out.Pairings = append(out.Pairings, pairingOut(p))
	}
	return writeJSON(w, http.StatusOK, out)
}

// approvePairing approves a code. Over TCP it needs step-up: it makes a
// session, and the new one's window ends no later than the approver's.
func (a *API) approvePairing(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Approving a device (it gets a session of its own)"); err != nil {
		return err
	}
	until := time.Now().Add(a.cfg.StepUpWindow)
	if sess := sessionOf(r); sess != nil && sess.stepUpUntil.Before(until) {
		until = sess.stepUpUntil
	}
	p, err := a.pairings.Approve(r.PathValue("code"), until)
	if err != nil {
		return err
	}
	a.cfg.Log.Info("device pairing approved", "code", p.Code, "device", p.DeviceName)
	return writeJSON(w, http.StatusOK, pairingOut(p))
}

// denyPairing refuses a code.
func (a *API) denyPairing(w http.ResponseWriter, r *http.Request) error {
	p, err := a.pairings.Deny(r.PathValue("code"))
	if err != nil {
		return err
	}
	a.cfg.Log.Info("device pairing denied", "code", p.Code, "device", p.DeviceName)
	return writeJSON(w, http.StatusOK, pairingOut(p))
}

func pairingOut(p pairing.Pairing) wire.Pairing {
	return wire.Pairing{Code: p.Code, DeviceName: p.DeviceName, UserAgent: p.UserAgent, Address: p.Addr.String(), Status: string(p.Status),
		CreatedAt: ts(p.CreatedAt), ExpiresAt: ts(p.ExpiresAt)}
}
