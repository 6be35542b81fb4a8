package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

const iPhone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"

// bare sends a request over TCP with no API key: only the headers given
// (name, value pairs) and the cookie, if any. It returns the status, the
// body and the answer's header.
func (h *helper) bare(cookie *http.Cookie, method, path, body string, hdr ...string) (int, string, http.Header) {
	h.t.Helper()
	return h.send(http.DefaultClient, cookie, method, path, body, hdr...)
}

// bareFrom is bare from the address from of this machine: another
// program of it, a device elsewhere stands for.
func (h *helper) bareFrom(from netip.Addr, cookie *http.Cookie, method, path, body string, hdr ...string) (int, string, http.Header) {
	h.t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	c := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer c.CloseIdleConnections()
	return h.send(c, cookie, method, path, body, hdr...)
}

func (h *helper) send(c *http.Client, cookie *http.Cookie, method, path, body string, hdr ...string) (int, string, http.Header) {
	h.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+h.addr+path, r)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

// startNetHelper runs a helper on this machine's network address with
// remote access on (daemontest.StartOnNetwork): devices pair with it
// from that address, as a phone does from its own. Pairing is refused
// from loopback.
func startNetHelper(t *testing.T, mutate func(*daemon.Config)) *helper {
	t.Helper()
	llm := llmtest.New(t) // closed after the helper stops
	return newHelper(t, daemontest.StartOnNetwork(t, mutate), llm)
}

// ip is the address the helper listens on, and the one this machine's
// requests to it come from.
func (h *helper) ip() netip.Addr {
	h.t.Helper()
	ap, err := netip.ParseAddrPort(h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	return ap.Addr()
}

// askToPair asks for a code as a device with user agent ua would.
func askToPair(t *testing.T, h *helper, ua string) wire.PairingRequest {
	t.Helper()
	status, body, _ := h.bare(nil, "POST", "/api/v1/auth/pair/request", "", "User-Agent", ua)
	var p wire.PairingRequest
	if status != 201 || json.Unmarshal([]byte(body), &p) != nil || p.PairingID == "" || len(p.Code) != 6 {
		t.Fatalf("POST /auth/pair/request without credentials: %d %s", status, body)
	}
	return p
}

// poll polls a pairing; it returns its status and the cookie it set.
func poll(t *testing.T, h *helper, id string) (int, wire.PairingStatus, *http.Cookie) {
	t.Helper()
	status, body, hdr := h.bare(nil, "GET", "/api/v1/auth/pair/status?id="+id, "")
	var st wire.PairingStatus
	json.Unmarshal([]byte(body), &st)
	resp := http.Response{Header: hdr}
	for _, c := range resp.Cookies() {
		if c.Name == "hivecrew_session" {
			return status, st, c
		}
	}
	return status, st, nil
}

// pair pairs a device through the routes, approving it on the unix socket,
// and returns its session cookie.
func pair(t *testing.T, h *helper, ua string) *http.Cookie {
	t.Helper()
	p := askToPair(t, h, ua)
	if _, err := h.unix.ApprovePairing(context.Background(), p.Code); err != nil {
		t.Fatal(err)
	}
	status, st, cookie := poll(t, h, p.PairingID)
	if status != 200 || st.Status != "approved" || cookie == nil {
		t.Fatalf("poll after approval: %d %+v, cookie %v", status, st, cookie)
	}
	return cookie
}

// TestGetAuthCheckIsHonest: Swift answers authenticated for any Bearer
// header; ours checks what it is sent, and never answers 401.
func TestGetAuthCheckIsHonest(t *testing.T) {
	h := startNetHelper(t, nil)
	loginCookie, _, _ := signIn(t, h, "")
	deviceCookie := pair(t, h, iPhone)
	for _, c := range []struct {
		what   string
		cookie *http.Cookie
		hdr    []string
		want   wire.AuthCheck
	}{
		{"nothing", nil, nil, wire.AuthCheck{}},
		{"the API key", nil, []string{"Authorization", "Bearer " + h.key}, wire.AuthCheck{Authenticated: true, Method: "bearer"}},
		{"a forged key", nil, []string{"Authorization", "Bearer hc_" + strings.Repeat("A", 43)}, wire.AuthCheck{}},
		{"a bearer of nothing", nil, []string{"Authorization", "Bearer "}, wire.AuthCheck{}},
		{"basic auth", nil, []string{"Authorization", "Basic dXNlcjpwYXNz"}, wire.AuthCheck{}},
		{"a login link's cookie", loginCookie, nil, wire.AuthCheck{Authenticated: true, Method: "cookie"}},
		{"a paired device's cookie", deviceCookie, nil, wire.AuthCheck{Authenticated: true, Method: "cookie"}},
		{"a paired device's cookie from another port", deviceCookie, []string{"Sec-Fetch-Site", "same-site"}, wire.AuthCheck{}},
		{"a forged device cookie", &http.Cookie{Name: "hivecrew_session", Value: "hcd_" + strings.Repeat("A", 43)}, nil, wire.AuthCheck{}},
		{"a forged cookie", &http.Cookie{Name: "hivecrew_session", Value: strings.Repeat("0", 64)}, nil, wire.AuthCheck{}},
	} {
		status, body, _ := h.bare(c.cookie, "GET", "/api/v1/auth/check", "", c.hdr...)
		var got wire.AuthCheck
		if status != 200 || json.Unmarshal([]byte(body), &got) != nil || got != c.want {
			t.Errorf("GET /auth/check with %s: %d %s; want 200 %+v", c.what, status, body, c.want)
		}
	}
	overUnix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", h.paths.Socket())
	}}}
	resp, err := overUnix.Get("http://helper/api/v1/auth/check")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var local wire.AuthCheck
	if err := json.NewDecoder(resp.Body).Decode(&local); err != nil || !local.Authenticated {
		t.Fatalf("on the unix socket: %+v, %v", local, err)
	}
}

// TestPairedDeviceIsASessionFromThisSiteOnly pairs a device and checks
// what its cookie may do: read, and change anything only when the
// browser says the request comes from this site.
func TestPairedDeviceIsASessionFromThisSiteOnly(t *testing.T) {
	h := startNetHelper(t, nil)
	h.addProvider()
	ctx := context.Background()
	p := askToPair(t, h, iPhone+" \u202eevil")
	if status, st, cookie := poll(t, h, p.PairingID); status != 200 || st.Status != "pending" || cookie != nil {
		t.Fatalf("poll before the answer: %d %+v %v", status, st, cookie)
	}
	// The desktop sees the code, the user agent (printable) and the time;
	// never the secret id.
	pending, err := h.unix.Pairings(ctx)
	if err != nil || len(pending) != 1 || pending[0].Code != p.Code || pending[0].DeviceName != "Safari on iOS" || pending[0].Address != h.ip().String() ||
		!strings.HasSuffix(pending[0].UserAgent, `Safari/604.1 \u202eevil`) || time.Since(pending[0].CreatedAt) > time.Minute {
		t.Fatalf("pending pairings: %+v, %v", pending, err)
	}
	if _, body, _ := h.bare(nil, "GET", "/api/v1/auth/pairings", "", "Authorization", "Bearer "+h.key); strings.Contains(body, p.PairingID) {
		t.Fatal("the pending list shows the pairing's secret id")
	}
	// Approving needs no more than the code as shown.
	if _, err := h.unix.ApprovePairing(ctx, p.Code[:3]+" "+p.Code[3:]); err != nil {
		t.Fatal(err)
	}
	status, st, cookie := poll(t, h, p.PairingID)
	if status != 200 || st.Status != "approved" || st.DeviceName != "Safari on iOS" || cookie == nil {
		t.Fatalf("poll after approval: %d %+v %v", status, st, cookie)
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.MaxAge != 180*24*3600 || cookie.Path != "/" {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, 180 days, Path=/", cookie)
	}
	if status, _, again := poll(t, h, p.PairingID); status != 404 || again != nil {
		t.Fatalf("a second poll of an approved pairing: %d, cookie %v; want 404 and no session", status, again)
	}

	origin := "http://" + h.addr
	task := `{"description":"Tidy the desktop"}`
	for _, c := range []struct {
		what         string
		method, path string
		body         string
		hdr          []string
		want         int
	}{
		{"a read with no header (a navigation)", "GET", "/api/v1/tasks", "", nil, 200},
		{"a read from this site", "GET", "/api/v1/tasks", "", []string{"Sec-Fetch-Site", "same-origin"}, 200},
		{"a read from another port of this host", "GET", "/api/v1/tasks", "", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"a read from another site", "GET", "/api/v1/tasks", "", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"a task with no sign of its site (a script, an old form)", "POST", "/api/v1/tasks", task, nil, 403},
		{"a task from another port of this host", "POST", "/api/v1/tasks", task, []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"a task with another site's Origin", "POST", "/api/v1/tasks", task, []string{"Origin", "http://evil.example"}, 403},
		{"a task with another port's Origin", "POST", "/api/v1/tasks", task, []string{"Origin", "http://127.0.0.1:1"}, 403},
		{"a task with Origin null", "POST", "/api/v1/tasks", task, []string{"Origin", "null"}, 403},
		{"a task with this site's Origin but from another port", "POST", "/api/v1/tasks", task, []string{"Origin", origin, "Sec-Fetch-Site", "same-site"}, 403},
		{"a task with this site's Origin", "POST", "/api/v1/tasks", task, []string{"Origin", origin}, 201},
		{"a task with Sec-Fetch-Site: same-origin", "POST", "/api/v1/tasks", task, []string{"Sec-Fetch-Site", "same-origin"}, 201},
		{"a deletion with no sign of its site", "DELETE", "/api/v1/auth/devices/x", "", nil, 403},
	} {
		status, body, _ := h.bare(cookie, c.method, c.path, c.body, c.hdr...)
		if status != c.want {
			t.Errorf("%s: %d %s; want %d", c.what, status, body, c.want)
		}
	}

	// It is listed, as the current device when it asks.
	_, body, _ := h.bare(cookie, "GET", "/api/v1/auth/devices", "")
	var list wire.DeviceList
	json.Unmarshal([]byte(body), &list)
	if len(list.Devices) != 1 || !list.Devices[0].Current || list.Devices[0].Browser != "Safari" || list.Devices[0].OS != "iOS" || list.Devices[0].DeviceType != "mobile" ||
		list.Devices[0].Address != h.ip().String() {
		t.Fatalf("GET /auth/devices as the device: %s", body)
	}

	// Signing out ends it: the cookie is refused from then on.
	if status, body, _ := h.bare(cookie, "POST", "/api/v1/auth/logout", "", "Origin", origin); status != 200 || !strings.Contains(body, "logged_out") {
		t.Fatalf("logout: %d %s", status, body)
	}
	if status, _, _ := h.bare(cookie, "GET", "/api/v1/tasks", ""); status != 401 {
		t.Fatalf("the cookie after logout: %d; want 401", status)
	}
	if ds, _ := h.unix.Devices(ctx); len(ds) != 0 {
		t.Fatalf("devices after logout: %+v", ds)
	}
}

// TestRevokedDeviceEndsAtOnce: revoking a device on the desktop refuses
// its very next request.
func TestRevokedDeviceEndsAtOnce(t *testing.T) {
	h := startNetHelper(t, nil)
	ctx := context.Background()
	phone := pair(t, h, iPhone)
	laptop := pair(t, h, "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0")
	ds, err := h.unix.Devices(ctx)
	if err != nil || len(ds) != 2 {
		t.Fatalf("devices: %+v, %v", ds, err)
	}
	for _, c := range []*http.Cookie{phone, laptop} {
		if status, _, _ := h.bare(c, "GET", "/api/v1/tasks", ""); status != 200 {
			t.Fatalf("a paired device reads: %d", status)
		}
	}
	phoneID := ds[0].ID
	if ds[1].Name == "Safari on iOS" {
		phoneID = ds[1].ID
	}
	if err := h.unix.RemoveDevice(ctx, phoneID); err != nil {
		t.Fatal(err)
	}
	if status, body, _ := h.bare(phone, "GET", "/api/v1/tasks", ""); status != 401 || !strings.Contains(body, "pair it again") {
		t.Fatalf("the revoked device: %d %s; want 401", status, body)
	}
	if status, _, _ := h.bare(laptop, "GET", "/api/v1/tasks", ""); status != 200 {
		t.Fatalf("the other device after one was revoked: %d", status)
	}
	if err := h.unix.RemoveDevice(ctx, phoneID); err == nil {
		t.Fatal("revoking a revoked device succeeded")
	}
}

// TestDeniedAndExpiredPairings: a denied code is answered rejected (the
// word of Swift's client) and gets no session; an expired one cannot be
// approved.
func TestDeniedAndExpiredPairings(t *testing.T) {
	h := startNetHelper(t, func(c *daemon.Config) { c.PairingTTL = time.Second })
	ctx := context.Background()
	denied := askToPair(t, h, iPhone)
	if _, err := h.unix.DenyPairing(ctx, denied.Code); err != nil {
		t.Fatal(err)
	}
	if status, st, cookie := poll(t, h, denied.PairingID); status != 200 || st.Status != "rejected" || cookie != nil {
		t.Fatalf("a denied code: %d %+v %v", status, st, cookie)
	}
	late := askToPair(t, h, iPhone)
	time.Sleep(1100 * time.Millisecond)
	if _, err := h.unix.ApprovePairing(ctx, late.Code); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("approving an expired code: %v", err)
	}
	if status, st, cookie := poll(t, h, late.PairingID); status != 200 || st.Status != "expired" || cookie != nil {
		t.Fatalf("an expired code: %d %+v %v", status, st, cookie)
	}
	if status, _, _ := h.bare(nil, "GET", "/api/v1/auth/pair/status?id=forged", ""); status != 404 {
		t.Fatalf("an unknown pairing id: %d", status)
	}
	if ds, _ := h.unix.Devices(ctx); len(ds) != 0 {
		t.Fatalf("devices after a denied and an expired code: %+v", ds)
	}
}

// TestPairingBurstStopsAtTheLimit: one client asking for codes as fast as
// it can gets five, then 429 with Retry-After, while the helper keeps
// answering everyone else at once.
func TestPairingBurstStopsAtTheLimit(t *testing.T) {
	h := startNetHelper(t, nil)
	const burst = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	retry := ""
	start := make(chan struct{})
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", "http://"+h.addr+"/api/v1/auth/pair/request", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got[resp.StatusCode]++
			if resp.StatusCode == 429 {
				retry = resp.Header.Get("Retry-After")
			}
			mu.Unlock()
		}()
	}
	close(start)
	// Meanwhile the helper answers others quickly.
	for range 5 {
		began := time.Now()
		h.expect(200, "GET", "/api/v1/system/status", nil)
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("GET /system/status took %s during the burst", d)
		}
	}
	wg.Wait()
	if got[201] != 5 || got[429] != burst-5 || retry == "" || retry == "0" {
		t.Fatalf("a burst of %d: %v (Retry-After %q); want 5 codes and the rest 429", burst, got, retry)
	}
	status, body, _ := h.bare(nil, "POST", "/api/v1/auth/pair/request", "")
	var e wire.Error
	if status != 429 || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "too_many_requests" || !strings.Contains(e.Error.Message, "try again in") {
		t.Fatalf("after the burst: %d %s", status, body)
	}
	// One client holds at most three codes.
	if ps, _ := h.unix.Pairings(context.Background()); len(ps) != 3 {
		t.Fatalf("%d codes pending from one client; want 3", len(ps))
	}
}

// TestSwiftAuthContract: what the auth routes answer is what Swift's
// Codable models of them (Models/APIDeviceAuth.swift) decode, checked
// against the contract's schemas along the way the Swift web client goes.
func TestSwiftAuthContract(t *testing.T) {
	c := loadContract(t)
	h := startNetHelper(t, nil)
	ctx := context.Background()
	status, body, _ := h.bare(nil, "POST", "/api/v1/auth/pair/request", "", "Content-Type", "application/json", "User-Agent", iPhone)
	if status != 201 {
		t.Fatalf("pair/request: %d %s", status, body)
	}
	c.check(t, "PairingRequestResponse", []byte(body))
	var p wire.PairingRequest
	json.Unmarshal([]byte(body), &p)
	if p.ExpiresIn != 300 {
		t.Fatalf("expiresIn %d; want Swift's 300", p.ExpiresIn)
	}
	_, body, _ = h.bare(nil, "GET", "/api/v1/auth/pair/status?id="+p.PairingID, "")
	c.check(t, "PairingStatusResponse", []byte(body))
	if _, err := h.unix.ApprovePairing(ctx, p.Code); err != nil {
		t.Fatal(err)
	}
	_, body, hdr := h.bare(nil, "GET", "/api/v1/auth/pair/status?id="+p.PairingID, "")
	c.check(t, "PairingStatusResponse", []byte(body))
	cookie := (&http.Response{Header: hdr}).Cookies()[0]
	for _, creds := range [][]string{nil, {"Authorization", "Bearer " + h.key}, {"Authorization", "Bearer hc_forged"}} {
		_, body, _ = h.bare(nil, "GET", "/api/v1/auth/check", "", creds...)
		c.check(t, "AuthCheckResponse", []byte(body))
	}
	_, body, _ = h.bare(cookie, "GET", "/api/v1/auth/check", "", "Sec-Fetch-Site", "same-origin")
	c.check(t, "AuthCheckResponse", []byte(body))
	_, body, _ = h.bare(cookie, "GET", "/api/v1/auth/devices", "", "Sec-Fetch-Site", "same-origin")
	c.check(t, "DeviceListResponse", []byte(body))
	denied := askToPair(t, h, iPhone)
	h.unix.DenyPairing(ctx, denied.Code)
	_, body, _ = h.bare(nil, "GET", "/api/v1/auth/pair/status?id="+denied.PairingID, "")
	c.check(t, "PairingStatusResponse", []byte(body))
	_, body, _ = h.bare(cookie, "POST", "/api/v1/auth/logout", "", "Sec-Fetch-Site", "same-origin")
	c.check(t, "LogoutResponse", []byte(body))
}
