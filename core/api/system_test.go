package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TestAuthHostAndOrigin: over TCP, no or a wrong or revoked key is a 401,
// a foreign Host or a cross-site Origin a 403; the unix socket needs no key;
// /health needs none.
func TestAuthHostAndOrigin(t *testing.T) {
	h := startHelper(t, nil)
	ctx := context.Background()
	h.expect(200, "GET", "/api/v1/system/status", nil)
	h.expect(401, "GET", "/api/v1/system/status", nil, "Authorization", "")
	h.expect(401, "GET", "/api/v1/system/status", nil, "Authorization", "Bearer hc_wrong")
	h.expect(401, "GET", "/api/v1/system/status", nil, "Authorization", "Basic dXNlcjpwYXNz")
	h.expect(403, "GET", "/api/v1/system/status", nil, "Host", "evil.example:5482")
	h.expect(403, "GET", "/api/v1/system/status", nil, "Origin", "http://evil.example")
	h.expect(403, "POST", "/api/v1/system/stop-all", nil, "Origin", "http://localhost.evil.example")
	h.expect(403, "GET", "/api/v1/system/status", nil, "Sec-Fetch-Site", "cross-site")
	h.expect(200, "GET", "/api/v1/system/status", nil, "Origin", "http://"+h.addr)
	h.expect(200, "GET", "/api/v1/system/status", nil, "Host", "localhost:5482")
	if _, err := h.unix.Status(ctx); err != nil {
		t.Fatalf("unix socket without a key: %v", err)
	}
	resp, err := http.Get("http://" + h.addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health without a key: %v %v", resp, err)
	}
	resp.Body.Close()
	// Remote access lets other Host names in.
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"allowRemoteAccess": true}); err != nil {
		t.Fatal(err)
	}
	h.expect(200, "GET", "/api/v1/system/status", nil, "Host", "hivecrew.lan:5482")

	// API keys: create, use, list, revoke.
	var created wire.CreatedAPIKey
	json.Unmarshal(h.expect(201, "POST", "/api/v1/apikeys", map[string]any{"name": "ci"}), &created)
	if !strings.HasPrefix(created.Key, "hc_") || created.Name != "ci" {
		t.Fatalf("created key = %+v", created)
	}
	h.expect(200, "GET", "/api/v1/tasks", nil, "Authorization", "Bearer "+created.Key)
	var keys wire.APIKeyList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/apikeys", nil), &keys)
	if len(keys.Keys) != 2 || strings.Contains(string(h.expect(200, "GET", "/api/v1/apikeys", nil)), created.Key) {
		t.Fatalf("keys = %+v (the key itself must never be listed)", keys)
	}
	h.expect(400, "POST", "/api/v1/apikeys", map[string]any{"name": ""})
	h.expect(204, "DELETE", "/api/v1/apikeys/"+created.ID, nil)
	h.expect(401, "GET", "/api/v1/tasks", nil, "Authorization", "Bearer "+created.Key)
	h.expect(404, "DELETE", "/api/v1/apikeys/nope", nil)

	// The login link is offered only on the unix socket, and works once.
	h.expect(404, "POST", "/api/v1/auth/login-link", nil)
	link, err := h.unix.LoginLink(ctx)
	if err != nil || !strings.Contains(link.URL, "/login?token=") {
		t.Fatalf("login link %+v %v", link, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(link.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("login: %d %+v", resp.StatusCode, cookies)
	}
	req, _ := http.NewRequest("GET", "http://"+h.addr+"/api/v1/tasks", nil)
	req.AddCookie(cookies[0])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("session cookie refused: %v %v", resp, err)
	}
	if resp, _ := noRedirect.Get(link.URL); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a used login link answered %d", resp.StatusCode)
	}
}

// TestProvidersTemplatesVMsSystem covers the provider, template, VM,
// settings and system endpoints and their errors. The API key never comes
// back.
func TestProvidersTemplatesVMsSystem(t *testing.T) {
	h := startHelper(t, nil)
	h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "X", "baseURL": "ftp://x"})
	h.expect(400, "POST", "/api/v1/providers", map[string]any{"baseURL": "https://x"})
	h.expect(400, "POST", "/api/v1/providers", map[string]any{"displayName": "X", "baseURL": "https://x", "backendMode": "magic"})
	var p wire.Provider
	out := h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Scripted", "baseURL": h.llm.URL, "apiKey": "sk-very-secret", "defaultModelId": "scripted"})
	json.Unmarshal(out, &p)
	if !p.IsDefault || !p.HasAPIKey || p.BackendMode != "chat_completions" || strings.Contains(string(out), "sk-very-secret") {
		t.Fatalf("provider = %s", out)
	}
	h.expect(409, "POST", "/api/v1/providers", map[string]any{"displayName": "scripted", "baseURL": h.llm.URL})
	var second wire.Provider
	json.Unmarshal(h.expect(201, "POST", "/api/v1/providers", map[string]any{"displayName": "Other", "baseURL": "http://127.0.0.1:9/v1", "isDefault": true}), &second)
	var list wire.ProviderList
	raw := h.expect(200, "GET", "/api/v1/providers", nil)
	json.Unmarshal(raw, &list)
	if len(list.Providers) != 2 || list.Providers[0].IsDefault || !list.Providers[1].IsDefault || list.Providers[1].HasAPIKey || strings.Contains(string(raw), "sk-very-secret") {
		t.Fatalf("providers = %s", raw)
	}
	h.expect(200, "GET", "/api/v1/providers/Scripted", nil)
	h.expect(404, "GET", "/api/v1/providers/none", nil)
	var models wire.ModelList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/providers/"+p.ID+"/models", nil), &models)
	if len(models.Models) != 1 || models.Models[0].ID != "scripted" {
		t.Fatalf("models = %+v", models)
	}
	var test wire.ProviderTest
	json.Unmarshal(h.expect(200, "POST", "/api/v1/providers/"+p.ID+"/test", nil), &test)
	if !test.OK {
		t.Fatalf("test = %+v", test)
	}
	// A key the endpoint refuses fails the test with the provider's words.
	h.llm.Key = "sk-other"
	json.Unmarshal(h.expect(200, "POST", "/api/v1/providers/"+p.ID+"/test", nil), &test)
	if test.OK || !strings.Contains(test.Message, "401") {
		t.Fatalf("test with a refused key = %+v", test)
	}
	h.llm.Key = ""
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/providers/"+p.ID, map[string]any{"isDefault": true, "apiKey": ""}), &p)
	if !p.IsDefault || p.HasAPIKey {
		t.Fatalf("after patch: %+v", p)
	}
	h.expect(400, "PATCH", "/api/v1/providers/"+p.ID, map[string]any{"isDefault": false})
	h.expect(204, "DELETE", "/api/v1/providers/"+p.ID, nil)
	h.expect(404, "DELETE", "/api/v1/providers/"+p.ID, nil)
	json.Unmarshal(h.expect(200, "GET", "/api/v1/providers", nil), &list)
	if len(list.Providers) != 1 || !list.Providers[0].IsDefault {
		t.Fatalf("after deleting the default: %+v", list)
	}

	// Templates: the backend's built-in one is the default.
	var ts wire.TemplateList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/templates", nil), &ts)
	if len(ts.Templates) != 1 || ts.DefaultTemplateID != "host" || !ts.Templates[0].IsDefault || ts.Templates[0].OS != "linux" {
		t.Fatalf("templates = %+v", ts)
	}
	h.expect(200, "GET", "/api/v1/templates/host", nil)
	h.expect(404, "GET", "/api/v1/templates/none", nil)

	// VMs: the warm pool keeps one ready.
	var vms wire.VMList
	deadline := time.Now().Add(10 * time.Second)
	for len(vms.VMs) == 0 || vms.VMs[0].State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("no warm VM: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
		json.Unmarshal(h.expect(200, "GET", "/api/v1/vms", nil), &vms)
	}
	h.expect(409, "POST", "/api/v1/vms/"+vms.VMs[0].ID+"/start", nil)
	h.expect(204, "POST", "/api/v1/vms/"+vms.VMs[0].ID+"/stop", nil)
	h.expect(404, "POST", "/api/v1/vms/"+vms.VMs[0].ID+"/stop", nil)
	h.expect(404, "DELETE", "/api/v1/vms/nope", nil)

	// System.
	var st wire.Status
	json.Unmarshal(h.expect(200, "GET", "/api/v1/system/status", nil), &st)
	if st.Status != "healthy" || st.Version == "" || st.Agents.MaxConcurrent != 2 || st.Resources.MemoryTotalGB <= 0 || st.Backend != "fake" ||
		st.Runtime.Goroutines < 10 || st.Runtime.HeapAllocMB <= 0 || st.Runtime.OpenFiles < 3 {
		t.Fatalf("status = %+v", st)
	}
	var cfg wire.SystemConfig
	json.Unmarshal(h.expect(200, "GET", "/api/v1/system/config", nil), &cfg)
	if cfg.MaxConcurrentVMs != 2 || cfg.DefaultTemplateID != "host" || cfg.DefaultTimeoutMinutes != 30 || cfg.WebURL != "http://"+h.addr {
		t.Fatalf("config = %+v", cfg)
	}
	var stop wire.StopAll
	json.Unmarshal(h.expect(200, "POST", "/api/v1/system/stop-all", nil), &stop)
	if stop.Stopped == nil || len(stop.Stopped) != 0 {
		t.Fatalf("stop-all with nothing running = %+v", stop)
	}
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"maxConcurrentVMs": 4})
	h.expect(400, "PATCH", "/api/v1/settings", map[string]any{"maxConcurrentVMs": -1})
	h.expect(400, "PATCH", "/api/v1/settings", map[string]any{"favouriteColour": "blue"})
	json.Unmarshal(h.expect(200, "GET", "/api/v1/system/config", nil), &cfg)
	if cfg.MaxConcurrentVMs != 4 {
		t.Fatalf("settings patch not applied: %+v", cfg)
	}
	h.expect(404, "GET", "/api/v1/nothing/here", nil)
	h.expect(405, "PUT", "/api/v1/tasks", nil)
}
