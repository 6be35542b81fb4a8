package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/api"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
)

// stepUpWindow is the step-up window of these tests' helpers.
const stepUpWindow = 2 * time.Second

// session is a browser's web session: its cookie and page token.
type session struct {
	h      *helper
	cookie *http.Cookie
	token  string
}

// staleSession signs in and waits out the step-up window.
func staleSession(t *testing.T, h *helper) session {
	t.Helper()
	cookie, token, _ := signIn(t, h, "")
	time.Sleep(stepUpWindow + 100*time.Millisecond)
	return session{h: h, cookie: cookie, token: token}
}

// freshSession signs in anew: its window has just begun.
func freshSession(t *testing.T, h *helper) session {
	t.Helper()
	cookie, token, _ := signIn(t, h, "")
	return session{h: h, cookie: cookie, token: token}
}

// do sends a request as the page would: JSON (a string or a value), or a
// multipart body given with its content type.
func (s session) do(method, path string, body any, contentType ...string) (int, string) {
	s.h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, "http://"+s.h.addr+path, r)
	req.AddCookie(s.cookie)
	req.Header.Set(api.SessionHeader, s.token)
	if body != nil {
		req.Header.Set("Content-Type", append(contentType, "application/json")[0])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// change is a request a stale session must not make without a fresh
// sign-in, and the status it gets with one.
type change struct {
	what         string
	method, path string
	body         any
	contentType  string
	fresh        int
}

// by makes the change as s.
func (c change) by(s session) (int, string) {
	s.h.t.Helper()
	if c.contentType != "" {
		return s.do(c.method, c.path, c.body, c.contentType)
	}
	return s.do(c.method, c.path, c.body)
}

// refusedUntilStepUp makes each change as a stale session (403
// step_up_required, saying how to sign in again), then with a fresh
// sign-in (c.fresh).
func refusedUntilStepUp(t *testing.T, h *helper, stale session, changes []change) {
	t.Helper()
	for _, c := range changes {
		status, body := c.by(stale)
		if status != http.StatusForbidden || !strings.Contains(body, "step_up_required") || !strings.Contains(body, "hivecrew open") {
			t.Errorf("%s, stale session (%s %s): %d %s; want 403 step_up_required", c.what, c.method, c.path, status, body)
			continue
		}
		if status, body := c.by(freshSession(t, h)); status != c.fresh {
			t.Errorf("%s, fresh session (%s %s): %d %s; want %d", c.what, c.method, c.path, status, body, c.fresh)
		}
	}
}

// allowedStale makes each change as a stale session: it needs no step-up.
func allowedStale(t *testing.T, stale session, changes []change) {
	t.Helper()
	for _, c := range changes {
		if status, body := c.by(stale); status != c.fresh {
			t.Errorf("%s, stale session (%s %s): %d %s; want %d", c.what, c.method, c.path, status, body, c.fresh)
		}
	}
}

// TestStaleSessionCannotRedirectASecret answers issue 34.6: a web session
// past its step-up window changed webSearchURL, and the stored search key
// went to the new address. Every change of where a stored secret is sent
// now needs a fresh sign-in: the search key's address (a new URL, Brave
// turned on again), a provider's address cleared to its vendor's, a
// template renamed to, or created under, the name that template-scoped
// provisioning (a secret variable) goes to, an MCP server's address and
// headers. Webhooks' addresses cannot be changed at all (remove and add,
// which needs step-up). What sends no secret anywhere new needs nothing.
func TestStaleSessionCannotRedirectASecret(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.WebStepUp = stepUpWindow })
	h.addProvider()
	// Set up with the API key (a script's), which never needs step-up.
	h.expect(200, "PUT", "/api/v1/web-search", map[string]any{"apiKey": "brave-key-secret"})
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"webSearchBackend": "brave", "webSearchURL": ""})
	h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Proxied", "type": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKey": "sk-proxied"})
	h.expect(200, "PATCH", "/api/v1/templates/host", map[string]any{"name": "work"})
	h.expect(200, "PUT", "/api/v1/provisioning", map[string]any{"environmentVariables": []any{
		map[string]any{"key": "WORK_TOKEN", "value": "work-secret", "secret": true, "template": "work"}}})
	h.expect(200, "PATCH", "/api/v1/templates/host", map[string]any{"name": "Host"}) // "work" is no template's now
	h.expect(201, "POST", "/api/v1/mcp-servers", map[string]any{"name": "files", "url": "http://127.0.0.1:9/mcp", "headers": map[string]string{"Authorization": "Bearer mcp-secret"}})
	var got, stolen atomic.Int32
	ops := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer ops.Close()
	steal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stolen.Add(1) }))
	defer steal.Close()
	h.expect(201, "POST", "/api/v1/webhooks", map[string]any{"name": "ops", "url": ops.URL + "/hook", "secret": "hook-secret"})

	stale := staleSession(t, h)
	refusedUntilStepUp(t, h, stale, []change{
		{what: "the search key's address", method: "PATCH", path: "/api/v1/settings", body: `{"webSearchURL":"http://127.0.0.1:9/steal"}`, fresh: 200},
		{what: "a provider's address cleared to its vendor's", method: "PATCH", path: "/api/v1/providers/Proxied", body: `{"clearBaseURL":true}`, fresh: 200},
		{what: "a template named as provisioning's scope", method: "PATCH", path: "/api/v1/templates/host", body: `{"name":"work"}`, fresh: 200},
	})
	var ws wire.WebSearch
	json.Unmarshal(h.expect(200, "GET", "/api/v1/web-search", nil), &ws)
	if ws.URL != "http://127.0.0.1:9/steal" || !ws.HasAPIKey {
		t.Fatalf("web search after the fresh sign-in: %+v", ws)
	}
	var p wire.Provider
	json.Unmarshal(h.expect(200, "GET", "/api/v1/providers/Proxied", nil), &p)
	if p.BaseURL == "http://127.0.0.1:9/v1" {
		t.Errorf("the provider kept its address after clearBaseURL: %+v", p)
	}

	// Turning search off sends the key nowhere: no step-up. Turning it
	// on again sends it again: step-up.
	allowedStale(t, stale, []change{{what: "search off", method: "PATCH", path: "/api/v1/settings", body: `{"webSearchBackend":""}`, fresh: 200}})
	refusedUntilStepUp(t, h, stale, []change{
		{what: "Brave turned on again", method: "PATCH", path: "/api/v1/settings", body: `{"webSearchBackend":"brave"}`, fresh: 200},
	})
	// The settings form sends the search fields unchanged: nothing to ask.
	allowedStale(t, stale, []change{{what: "search sent unchanged", method: "PATCH", path: "/api/v1/settings",
		body: `{"webSearchBackend":"brave","webSearchURL":"http://127.0.0.1:9/steal","defaultTimeoutMinutes":40}`, fresh: 200}})
	// Without a stored key no secret moves: a SearXNG address is the
	// session's to change.
	h.expect(200, "PUT", "/api/v1/web-search", map[string]any{"apiKey": ""})
	allowedStale(t, stale, []change{{what: "the address without a stored key", method: "PATCH", path: "/api/v1/settings",
		body: `{"webSearchBackend":"searxng","webSearchURL":"http://127.0.0.1:9/searx"}`, fresh: 200}})

	// A new template may take a scope that no template holds; with every
	// scope held, creating one asks nothing (the manifest is then looked
	// up: 404).
	h.expect(200, "PATCH", "/api/v1/templates/host", map[string]any{"name": "Host"})
	refusedUntilStepUp(t, h, stale, []change{
		{what: "a template created while a scope is free", method: "POST", path: "/api/v1/templates", body: `{"manifest":"no-such-manifest"}`, fresh: 404},
	})
	h.expect(200, "PATCH", "/api/v1/templates/host", map[string]any{"name": "work"})
	allowedStale(t, stale, []change{
		{what: "a template created with every scope held", method: "POST", path: "/api/v1/templates", body: `{"manifest":"no-such-manifest"}`, fresh: 404},
		{what: "a template's description", method: "PATCH", path: "/api/v1/templates/host", body: `{"name":"work","description":"Mine"}`, fresh: 200},
	})

	// An MCP server's address and headers change with a fresh sign-in
	// only (its stored headers go where it points); turning it off needs
	// none.
	refusedUntilStepUp(t, h, stale, []change{
		{what: "an MCP server's address, its header kept", method: "PATCH", path: "/api/v1/mcp-servers/files", body: `{"url":"http://127.0.0.1:9/moved","headers":{"Authorization":null}}`, fresh: 200},
		{what: "an MCP server turned off and its header changed", method: "PATCH", path: "/api/v1/mcp-servers/files", body: `{"enabled":false,"headers":{"Authorization":"x"}}`, fresh: 200},
	})
	allowedStale(t, stale, []change{{what: "an MCP server turned off", method: "PATCH", path: "/api/v1/mcp-servers/files", body: `{"enabled":false}`, fresh: 200}})
	// A credential is changed or imported as it is added: fresh only.
	h.expect(201, "POST", "/api/v1/credentials", map[string]any{"name": "intranet", "password": "in-secret"})
	refusedUntilStepUp(t, h, stale, []change{
		{what: "a credential's password", method: "PATCH", path: "/api/v1/credentials/intranet", body: `{"password":"new-secret"}`, fresh: 200},
		{what: "a browser's export imported", method: "POST", path: "/api/v1/credentials/import", body: "name,url,username,password\nbank,https://bank.example,ada,bk-secret\n", contentType: "text/csv", fresh: 201},
	})
	// A webhook's address is not changeable, fresh or stale: a PATCH is
	// refused or changes only whether it is on.
	for _, c := range []struct{ path, body string }{
		{"/api/v1/webhooks/ops", `{"url":"` + steal.URL + `"}`},
		{"/api/v1/webhooks/ops", `{"enabled":false,"url":"` + steal.URL + `"}`},
	} {
		for name, s := range map[string]session{"stale": stale, "fresh": freshSession(t, h)} {
			if status, body := s.do("PATCH", c.path, c.body); status != http.StatusBadRequest && status != http.StatusOK {
				t.Errorf("PATCH %s %s, %s session: %d %s; want 400 or 200", c.path, c.body, name, status, body)
			}
		}
	}
	var mcps wire.MCPServerList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/mcp-servers", nil), &mcps)
	if len(mcps.Servers) != 1 || mcps.Servers[0].URL != "http://127.0.0.1:9/moved" || mcps.Servers[0].Enabled {
		t.Errorf("after the fresh session's PATCHes: MCP servers %+v", mcps.Servers)
	}
	var test wire.WebhookTest
	json.Unmarshal(h.expect(200, "POST", "/api/v1/webhooks/ops/test", nil), &test)
	if !test.OK || got.Load() != 1 || stolen.Load() != 0 {
		t.Errorf("the webhook's test after PATCHes of its address: %+v; its receiver got %d, the other %d", test, got.Load(), stolen.Load())
	}
}

// TestStaleSessionCannotLoosenATask answers issue 34.9: a web session
// past its step-up window could not loosen Settings but could loosen a
// task: a tool policy allowing everything, the internet while Settings
// say offline, an output folder elsewhere. Every way a task is made (POST
// /tasks in JSON and multipart, a batch, a preset saved, edited, made from
// a task or run, a rerun, a schedule created, edited, turned on or run)
// now needs a fresh sign-in for grants past Settings; a task within them
// needs nothing.
func TestStaleSessionCannotLoosenATask(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.WebStepUp = stepUpWindow })
	h.addProvider()
	out := t.TempDir()
	elsewhere := t.TempDir()
	// A link inside Settings' folder that leads out of it is elsewhere.
	if err := os.Symlink(elsewhere, filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"outputDirectory": out, "networkMode": "offline", "toolPolicy": map[string]string{"run_shell": "ask", "open_url": "deny"}})
	h.expect(201, "POST", "/api/v1/mcp-servers", map[string]any{"name": "files", "url": "http://127.0.0.1:9/mcp", "permission": "ask"})

	// Made with the API key: a loose task (finished), preset and
	// schedules.
	var loose wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Loose", "networkMode": "internet"}), &loose)
	h.waitTask(loose.ID, "the loose task to finish", terminal)
	h.expect(201, "POST", "/api/v1/presets", map[string]any{"name": "open", "task": map[string]any{"description": "Open", "toolPolicy": map[string]string{"run_shell": "allow"}}})
	when := map[string]any{"scheduledAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}
	var sched, off wire.Schedule
	json.Unmarshal(h.expect(201, "POST", "/api/v1/schedules", map[string]any{"title": "Nightly", "description": "Nightly", "schedule": when}), &sched)
	json.Unmarshal(h.expect(201, "POST", "/api/v1/schedules", map[string]any{"title": "Off", "description": "Off", "schedule": when, "networkMode": "internet", "isEnabled": false}), &off)

	task := func(extra string) string { return `{"description":"Do it"` + extra + `}` }
	ct, multipart := multipartTask(map[string]string{"description": "Do it", "toolPolicy": `{"run_shell":"allow"}`}, nil)
	stale := staleSession(t, h)
	refusedUntilStepUp(t, h, stale, []change{
		{what: "run_shell allowed", method: "POST", path: "/api/v1/tasks", body: task(`,"toolPolicy":{"run_shell":"allow"}`), fresh: 201},
		{what: "a terminal allowed", method: "POST", path: "/api/v1/tasks", body: task(`,"toolPolicy":{"open_terminal":"allow"}`), fresh: 201},
		{what: "a denied tool asked", method: "POST", path: "/api/v1/tasks", body: task(`,"toolPolicy":{"open_url":"ask"}`), fresh: 201},
		{what: "an MCP server's tools allowed", method: "POST", path: "/api/v1/tasks", body: task(`,"toolPolicy":{"mcp__files__*":"allow"}`), fresh: 201},
		{what: "the internet", method: "POST", path: "/api/v1/tasks", body: task(`,"networkMode":"internet"`), fresh: 201},
		{what: "an output folder elsewhere", method: "POST", path: "/api/v1/tasks", body: task(`,"outputDirectory":` + quote(elsewhere)), fresh: 201},
		{what: "an output folder through a link", method: "POST", path: "/api/v1/tasks", body: task(`,"outputDirectory":` + quote(filepath.Join(out, "link", "x"))), fresh: 201},
		{what: "setup commands", method: "POST", path: "/api/v1/tasks", body: task(`,"provisioning":{"setupCommands":[{"command":"true"}]}`), fresh: 201},
		{what: "a policy in a multipart task", method: "POST", path: "/api/v1/tasks", body: multipart, contentType: ct, fresh: 201},
		{what: "a batch with the internet", method: "POST", path: "/api/v1/tasks/batch", body: `{"description":"Do it","networkMode":"internet","targets":[{"providerId":"Scripted","modelId":"scripted"}]}`, fresh: 201},
		{what: "a preset with the internet", method: "POST", path: "/api/v1/presets", body: `{"name":"net","task":{"description":"Net","networkMode":"internet"}}`, fresh: 201},
		{what: "a preset edited to the internet", method: "PATCH", path: "/api/v1/presets/open", body: `{"task":{"description":"Net","networkMode":"internet"}}`, fresh: 200},
		{what: "a preset made from a loose task", method: "POST", path: "/api/v1/presets", body: `{"name":"from","fromTaskId":"` + loose.ID + `"}`, fresh: 201},
		{what: "a loose preset run", method: "POST", path: "/api/v1/presets/net/run", body: `{}`, fresh: 201},
		{what: "a loose task rerun", method: "PATCH", path: "/api/v1/tasks/" + loose.ID, body: `{"action":"rerun"}`, fresh: 200},
		{what: "a schedule with run_shell allowed", method: "POST", path: "/api/v1/schedules", body: map[string]any{"title": "Loose", "description": "Loose", "schedule": when, "toolPolicy": map[string]string{"run_shell": "allow"}}, fresh: 201},
		{what: "a schedule edited to an output folder elsewhere", method: "PATCH", path: "/api/v1/schedules/" + sched.ID, body: `{"outputDirectory":` + quote(elsewhere) + `}`, fresh: 200},
		{what: "a loose schedule turned on", method: "PATCH", path: "/api/v1/schedules/" + off.ID, body: `{"isEnabled":true}`, fresh: 200},
		{what: "a loose schedule run", method: "POST", path: "/api/v1/schedules/" + off.ID + "/run", body: `{}`, fresh: 200},
		{what: "a schedule replaced with a folder of this computer", method: "PUT", path: "/api/v1/schedules/" + sched.ID,
			body: map[string]any{"title": "Nightly", "description": "Nightly", "schedule": when, "hostFolders": []string{elsewhere}}, fresh: 200},
		{what: "a schedule edited to setup commands", method: "PATCH", path: "/api/v1/schedules/" + sched.ID,
			body: `{"provisioning":{"setupCommands":[{"command":"true"}]}}`, fresh: 200},
	})

	// Within Settings, a stale session needs nothing.
	var within wire.Task
	status, body := stale.do("POST", "/api/v1/tasks", task(`,"toolPolicy":{"run_shell":"deny","open_url":"deny","screenshot":"ask","wait":"allow"},"networkMode":"offline","outputDirectory":`+
		quote(filepath.Join(out, "report"))+`,"provisioning":{"environment":{"MODE":"quiet"}}`))
	if status != 201 {
		t.Fatalf("a task within Settings, stale session: %d %s", status, body)
	}
	json.Unmarshal([]byte(body), &within)
	h.waitTask(within.ID, "the task within Settings to finish", terminal)
	allowedStale(t, stale, []change{
		{what: "a task within Settings rerun", method: "PATCH", path: "/api/v1/tasks/" + within.ID, body: `{"action":"rerun"}`, fresh: 200},
		{what: "a preset within Settings", method: "POST", path: "/api/v1/presets", body: `{"name":"tight","task":{"description":"Tight","toolPolicy":{"run_shell":"deny"}}}`, fresh: 201},
		{what: "a preset within Settings run", method: "POST", path: "/api/v1/presets/tight/run", body: `{}`, fresh: 201},
		{what: "a schedule within Settings", method: "POST", path: "/api/v1/schedules", body: map[string]any{"title": "Tight", "description": "Tight", "schedule": when, "networkMode": "offline"}, fresh: 201},
		{what: "a schedule renamed, its loose grants unchanged", method: "PATCH", path: "/api/v1/schedules/" + off.ID, body: `{"title":"Renamed","networkMode":"internet"}`, fresh: 200},
		{what: "a schedule replaced, its loose grants unchanged", method: "PUT", path: "/api/v1/schedules/" + off.ID,
			body: map[string]any{"title": "Replaced", "description": "Off", "schedule": when, "networkMode": "internet"}, fresh: 200},
		{what: "a batch within Settings", method: "POST", path: "/api/v1/tasks/batch", body: `{"description":"Do it","targets":[{"providerId":"Scripted","modelId":"scripted"}]}`, fresh: 201},
	})

	// Settings that allow more make the same task a task within them.
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"networkMode": "internet", "toolPolicy": map[string]string{"run_shell": "allow"}})
	allowedStale(t, stale, []change{
		{what: "the internet when Settings give it", method: "POST", path: "/api/v1/tasks", body: task(`,"networkMode":"internet","toolPolicy":{"run_shell":"allow"},"provisioning":{"setupCommands":[{"command":"true"}]}`), fresh: 201},
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
