package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/webhooks"
	"github.com/hivecrew/hivecrew/core/wire"
)

// TestWebhooksCommands: a webhook added with its secret read from stdin is
// listed without its path or secret, tested (the receiver gets a signed
// webhook.test in the Slack shape), turned off and on, and removed; a receiver that answers
// 400 fails its test in words with a non-zero exit; an address that is not
// http(s), an unknown format or event, and a missing name are refused
// before anything is stored.
func TestWebhooksCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, string(b))
		if strings.HasSuffix(r.URL.Path, "/refuses") {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)

	const secret = "whsec-for-the-test"
	var out, errOut strings.Builder
	if code := runWith([]string{"webhooks", "add", "--name", "team", "--url", srv.URL + "/services/T0/B0/token", "--format", "slack",
		"--event", "task.ended", "--event", "task.question", "--secret", "-", "--home", h.home},
		strings.NewReader(secret+"\n"), &out, &errOut); code != 0 {
		t.Fatalf("webhooks add: exit %d: %s", code, errOut.String())
	}
	ls := h.ok("webhooks", "ls").stdout
	if !regexp.MustCompile(`(?m)^team +on +slack +task\.ended,task\.question +stored +` + regexp.QuoteMeta(srv.URL) + `/…$`).MatchString(ls) {
		t.Fatalf("webhooks ls:\n%s", ls)
	}
	if js := h.ok("webhooks", "ls", "--json").stdout; strings.Contains(js, secret) || strings.Contains(js, "token") {
		t.Fatalf("webhooks ls --json shows the secret or the path:\n%s", js)
	}
	if r := h.ok("webhooks", "test", "team"); !strings.Contains(r.stdout, "team works: it answered 200.") {
		t.Fatalf("webhooks test: %s", r)
	}
	mu.Lock()
	if len(got) != 1 || got[0].URL.Path != "/services/T0/B0/token" || got[0].Header.Get(webhooks.EventHeader) != "webhook.test" ||
		!strings.HasPrefix(bodies[0], `{"text":"Hivecrew test: this webhook works`) {
		t.Fatalf("the receiver got %d requests: %v", len(got), bodies)
	}
	if err := webhooks.Verify(secret, got[0].Header.Get(webhooks.SignatureHeader), []byte(bodies[0]), time.Minute); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()

	h.ok("webhooks", "add", "--name", "refuses", "--url", srv.URL+"/refuses")
	r := h.cli("webhooks", "test", "refuses")
	if r.code == 0 || !strings.Contains(r.stderr, "refuses does not work:") || !strings.Contains(r.stderr, "400 Bad Request") {
		t.Fatalf("test of a receiver that refuses: %s", r)
	}
	var tr wire.WebhookTest
	decodeOne(t, h.cli("webhooks", "test", "refuses", "--json").stdout, &tr)
	if tr.OK || tr.Status != 400 || tr.Error == "" {
		t.Fatalf("test --json: %+v", tr)
	}
	if r := h.ok("webhooks", "off", "team"); !strings.Contains(r.stdout, "Webhook team is off") ||
		!regexp.MustCompile(`(?m)^team +off +slack `).MatchString(h.ok("webhooks", "ls").stdout) {
		t.Fatalf("webhooks off: %s", r)
	}
	if r := h.ok("webhooks", "on", "team"); !strings.Contains(r.stdout, "Webhook team is on") ||
		!regexp.MustCompile(`(?m)^team +on +slack `).MatchString(h.ok("webhooks", "ls").stdout) {
		t.Fatalf("webhooks on: %s", r)
	}
	if r := h.cli("webhooks", "off", "nobody"); r.code == 0 || !strings.Contains(r.stderr, `webhook "nobody" not found`) {
		t.Fatalf("webhooks off of an unknown one: %s", r)
	}
	h.ok("webhooks", "rm", "refuses")
	h.ok("webhooks", "rm", "team")
	if ls := h.ok("webhooks", "ls").stdout; !strings.HasPrefix(ls, "No webhooks yet") {
		t.Fatalf("after rm:\n%s", ls)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"webhooks", "add", "--name", "x", "--url", "ftp://example.com/hook"}, `webhook URL "ftp://example.com/hook" is not http(s)`},
		{[]string{"webhooks", "add", "--name", "x", "--url", "example.com/hook"}, "is not http(s)"},
		{[]string{"webhooks", "add", "--name", "x", "--url", "https://"}, "has no host"},
		{[]string{"webhooks", "add", "--name", "x", "--url", srv.URL, "--format", "teams"}, `unknown webhook format "teams"`},
		{[]string{"webhooks", "add", "--name", "x", "--url", srv.URL, "--event", "task.started"}, `unknown webhook event "task.started"`},
		{[]string{"webhooks", "add", "--url", srv.URL}, "needs --name and --url"},
		{[]string{"webhooks", "test", "nope"}, `webhook "nope" not found`},
	} {
		if r := h.cli(bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%q: %s", bad.args, r)
		}
	}
	if ws, err := h.c.Webhooks(t.Context()); err != nil || len(ws) != 0 {
		t.Fatalf("bad input stored a webhook: %v %+v", err, ws)
	}
}
