package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWebhookInput: a webhook's input is checked before anything is
// stored (a URL that is not http(s), a field of the wrong type, an
// unknown event or format, a name in use); a stored one is answered
// without its secret or its address's path, and removed.
func TestWebhookInput(t *testing.T) {
	h := startHelper(t, nil)
	for _, c := range []struct{ body, want string }{
		{`{"name":"a","url":"javascript:alert(1)"}`, "is not http(s)"},
		{`{"name":"a","url":"file:///etc/passwd"}`, "is not http(s)"},
		{`{"name":"a","url":"http://user:pw@example.com/"}`, "user name or password"},
		{`{"name":"a","url":"https://example.com/h","events":"task.ended"}`, "events"},
		{`{"name":"a","url":"https://example.com/h","enabled":"yes"}`, "enabled"},
		{`{"name":"a","url":"https://example.com/h","events":["task.started"]}`, `unknown webhook event \"task.started\"`},
		{`{"name":"a","url":"https://example.com/h","format":"teams"}`, `unknown webhook format \"teams\"`},
		{`{"name":" ","url":"https://example.com/h"}`, "needs a name"},
	} {
		if status, body := h.req("POST", "/api/v1/webhooks", c.body); status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("POST %s: %d %s; want 400 saying %q", c.body, status, body, c.want)
		}
	}
	if status, body := h.req("GET", "/api/v1/webhooks", nil); status != 200 || strings.TrimSpace(string(body)) != `{"webhooks":[]}` {
		t.Fatalf("after bad input: %d %s", status, body)
	}
	status, body := h.req("POST", "/api/v1/webhooks", `{"name":"ci","url":"https://hooks.example.com/services/T/B/tok?x=1","secret":"s3cret-value","events":["task.ended"]}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := h.req("POST", "/api/v1/webhooks", `{"name":"ci","url":"https://example.com/"}`); status != http.StatusConflict {
		t.Errorf("a second webhook named ci: %d %s", status, body)
	}
	status, body = h.req("GET", "/api/v1/webhooks", nil)
	var l struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	if err := json.Unmarshal(body, &l); err != nil || status != 200 || len(l.Webhooks) != 1 {
		t.Fatalf("list: %d %s", status, body)
	}
	w := l.Webhooks[0]
	if w["url"] != "https://hooks.example.com/…" || w["hasSecret"] != true || w["format"] != "json" || w["enabled"] != true ||
		strings.Contains(string(body), "s3cret") || strings.Contains(string(body), "tok") {
		t.Fatalf("listed as %s", body)
	}
	// Turned off and on by name; nothing but enabled is taken.
	for _, c := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"enabled":false}`, 200, `"enabled":false`},
		{`{"enabled":true}`, 200, `"enabled":true`},
		{`{"enabled":"no"}`, 400, "enabled"},
		{`{"url":"https://example.com/"}`, 400, "give enabled"},
		{`{}`, 400, "give enabled"},
	} {
		if status, body := h.req("PATCH", "/api/v1/webhooks/ci", c.body); status != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("PATCH %s: %d %s; want %d with %s", c.body, status, body, c.status, c.want)
		}
	}
	if status, _ := h.req("PATCH", "/api/v1/webhooks/nobody", `{"enabled":false}`); status != http.StatusNotFound {
		t.Errorf("PATCH of an unknown webhook: %d; want 404", status)
	}
	if status, _ := h.req("DELETE", "/api/v1/webhooks/ci", nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d", status)
	}
	if status, _ := h.req("DELETE", "/api/v1/webhooks/ci", nil); status != http.StatusNotFound {
		t.Fatalf("delete again: %d", status)
	}
}
