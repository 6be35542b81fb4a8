package webtools

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/config"
)

const articleHTML = `<!doctype html><html><head><title>Tide tables of Porthleven</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/shop">Shop</a></nav>
<div class="ad">BUY NOW — advertisement</div>
<article><h1>Tide tables of Porthleven</h1>
<p>The harbour of Porthleven dries at low water, and boats wait for the flood. The spring tides in March reach 5.6 metres at the inner quay, the highest of the year.</p>
<p>Harbour masters publish the tide tables each January; the <a href="/tides/2026">2026 tables</a> list every high and low water. Fishermen plan their trips around them, and so do the surfers at the reef.</p>
<p>In storms the outer harbour fills fast, and the baulks are lowered into the slots of the inner harbour to keep the swell out. This has been done since the nineteenth century.</p>
</article><footer>Copyright the harbour trust</footer></body></html>`

// A page's article reaches the model as Markdown, without its menus, with
// its links made absolute; a long page comes in parts.
func TestReadWebpage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(articleHTML))
		case "/long.txt":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(strings.Repeat("0123456789", 2000)))
		case "/bin":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/empty":
			w.Header().Set("Content-Type", "text/plain")
		}
	}))
	defer srv.Close()
	allow, err := config.ResolveAllow([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	client := Fetcher(allow)
	ctx := context.Background()
	out, err := Read(ctx, client, srv.URL+"/page", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Tide tables of Porthleven", "5.6 metres at the inner quay", "[2026 tables](" + srv.URL + "/tides/2026)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	for _, not := range []string{"BUY NOW", "About", "<p>"} {
		if strings.Contains(out, not) {
			t.Errorf("%q in\n%s", not, out)
		}
	}
	out, err = Read(ctx, client, srv.URL+"/long.txt", 0)
	if err != nil || !strings.Contains(out, "Characters 0 to 12000 of 20000. Read on with offset 12000.") {
		t.Fatalf("long page: %v\n%.300s", err, out)
	}
	out, err = Read(ctx, client, srv.URL+"/long.txt", 12000)
	if err != nil || !strings.Contains(out, "Characters 12000 to 20000 of 20000.") || strings.Contains(out, "Read on") {
		t.Fatalf("its second part: %v\n%.300s", err, out)
	}
	// A page that is empty when the model reads on (found by FuzzRead: it
	// sliced past the end and panicked).
	if _, err := Read(ctx, client, srv.URL+"/empty", 9); err == nil || !strings.Contains(err.Error(), "offset 9 is past the end: the page has 0 characters") {
		t.Fatalf("an empty page from an offset: %v", err)
	}
	if _, err := Read(ctx, client, srv.URL+"/bin", 0); err == nil || !strings.Contains(err.Error(), "application/octet-stream, not a page to read") {
		t.Fatalf("binary: %v", err)
	}
	for _, bad := range []string{"file:///etc/passwd", "ftp://example.org/", "javascript:alert(1)", "http://"} {
		if _, err := Read(ctx, client, bad, 0); err == nil || !strings.Contains(err.Error(), "is not an http(s) address") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// Threat: a page (or a model told by one) asks the host to fetch what only
// the host can reach: its own services on loopback, the cloud metadata
// address, the LAN, or a public name that resolves to one of those, or a
// redirect there. Each is refused on the address dialled; the allowlist
// lets the user open one on purpose.
func TestReadWebpageFollowsTheEgressPolicy(t *testing.T) {
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("the helper's secret"))
	}))
	defer secret.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(secret.URL, "http://"))
	ctx := context.Background()
	open := Fetcher(nil)
	for _, u := range []string{
		secret.URL,                                 // loopback by address
		"http://localhost:" + port + "/",           // loopback by name
		"http://169.254.169.254/latest/meta-data/", // cloud metadata
		"http://10.1.2.3/", "http://[::1]:" + port + "/",
	} {
		out, err := Read(ctx, open, u, 0)
		if err == nil || !strings.Contains(err.Error(), "refused by the egress policy") {
			t.Errorf("%s: %q, %v", u, out, err)
		}
	}
	// A redirect from an allowed server to a refused address: the secret
	// listens on 127.0.0.2 too, and only 127.0.0.1 is allowed.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	inner := httptest.NewUnstartedServer(secret.Config.Handler)
	inner.Listener.Close()
	inner.Listener = ln
	inner.Start()
	defer inner.Close()
	hop := httptest.NewServer(http.RedirectHandler(inner.URL, http.StatusFound))
	defer hop.Close()
	only1, _ := config.ResolveAllow([]string{"127.0.0.1"})
	if out, err := Read(ctx, Fetcher(only1), hop.URL, 0); err == nil || !strings.Contains(err.Error(), "127.0.0.2 is in 127.0.0.0/8") {
		t.Errorf("redirect to a refused address: %q, %v", out, err)
	}
	allow, _ := config.ResolveAllow([]string{"127.0.0.1"})
	out, err := Read(ctx, Fetcher(allow), secret.URL, 0)
	if err != nil || !strings.Contains(out, "the helper's secret") {
		t.Fatalf("allowed on purpose: %q, %v", out, err)
	}
}

// web_search asks the configured backend and lists its results; with no
// backend there is no web_search tool.
func TestWebSearch(t *testing.T) {
	var gotQuery, gotKey string
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery = r.URL.Query().Get("q")
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "no", 400)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{
			{"title": "Porthleven tides", "url": "https://example.org/tides", "content": "High water 5.6 m"},
			{"title": "Harbour trust", "url": "https://example.org/trust", "content": "About the harbour"},
		}})
	}))
	defer searx.Close()
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Subscription-Token")
		if gotKey != "k-123" {
			http.Error(w, `{"error":"bad key"}`, 401)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"web": map[string]any{"results": []map[string]string{
			{"title": "Brave result", "url": "https://example.com/b", "description": "from brave"}}}})
	}))
	defer brave.Close()
	run := func(s Search, args string) (string, error) {
		for _, tl := range Tools(s, nil) {
			if tl.Name == config.WebSearch {
				return tl.Run(context.Background(), json.RawMessage(args))
			}
		}
		t.Fatalf("no web_search for %+v", s)
		return "", nil
	}
	out, err := run(Search{Backend: "searxng", URL: searx.URL}, `{"query":"porthleven tides"}`)
	if err != nil || gotQuery != "porthleven tides" || !strings.Contains(out, "1. Porthleven tides\n   https://example.org/tides\n   High water 5.6 m") || !strings.Contains(out, "2. Harbour trust") {
		t.Fatalf("searxng: %v\n%s", err, out)
	}
	out, err = run(Search{Backend: "searxng", URL: searx.URL}, `{"query":"x","count":1}`)
	if err != nil || strings.Contains(out, "2.") {
		t.Fatalf("count 1: %v\n%s", err, out)
	}
	out, err = run(Search{Backend: "brave", URL: brave.URL, APIKey: "k-123"}, `{"query":"q"}`)
	if err != nil || !strings.Contains(out, "1. Brave result") {
		t.Fatalf("brave: %v\n%s", err, out)
	}
	if _, err := run(Search{Backend: "brave", URL: brave.URL, APIKey: "wrong"}, `{"query":"q"}`); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("brave, wrong key: %v", err)
	}
	names := func(ts []string) string { return strings.Join(ts, ",") }
	var got []string
	for _, tl := range Tools(Search{}, nil) {
		got = append(got, tl.Name)
	}
	if names(got) != config.ReadWebpage {
		t.Fatalf("without a backend: %v", got)
	}
}
