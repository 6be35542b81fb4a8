package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
)

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func checkSecurityHeaders(t *testing.T, target string, rec *httptest.ResponseRecorder) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"X-Frame-Options":         "DENY",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", target, k, got, v)
		}
	}
}

// TestPolicyIsStrict: the policy allows nothing inline and nothing from
// elsewhere.
func TestPolicyIsStrict(t *testing.T) {
	for _, part := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
		"img-src 'self' data: blob:", "frame-ancestors 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, part) {
			t.Errorf("policy lacks %q", part)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") || strings.Contains(ContentSecurityPolicy, "*") {
		t.Errorf("policy allows too much: %s", ContentSecurityPolicy)
	}
}

// TestPagesAndAssetsCarryThePolicy: every page route, every asset and the
// 404 page answer with the policy, nosniff and no-referrer and the right
// content type; HEAD works; an unchanged page or file revalidates to 304, by
// an ETag of the bytes served.
func TestPagesAndAssetsCarryThePolicy(t *testing.T) {
	h := Handler()
	routes := map[string]string{
		"/": "index.html", "/tasks/abc123": "task.html", "/tasks/abc123/replay": "replay.html",
		"/environments": "environments.html", "/settings": "settings.html", "/welcome": "welcome.html",
		"/evals": "evals.html", "/evals/20260301-100000-ab12": "eval.html", "/schedules": "schedules.html",
	}
	for target, file := range routes {
		rec := get(t, h, http.MethodGet, target)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Header().Get("Content-Type"))
		}
		want, ok := rendered[file]
		if !ok || rec.Body.String() != string(want) {
			t.Errorf("GET %s did not serve %s", target, file)
		}
		checkSecurityHeaders(t, target, rec)
		sum := sha256.Sum256(rec.Body.Bytes())
		etag := rec.Header().Get("ETag")
		if etag != `"`+hex.EncodeToString(sum[:8])+`"` {
			t.Errorf("GET %s: ETag %q is not of the page served", target, etag)
		}
		if again := get(t, h, http.MethodGet, target, "If-None-Match", etag); again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("GET %s with If-None-Match %q: %d, want 304", target, etag, again.Code)
		}
		if other := get(t, h, http.MethodGet, target, "If-None-Match", `"0000000000000000"`); other.Code != http.StatusOK {
			t.Errorf("GET %s with a stale ETag: %d, want 200", target, other.Code)
		}
		if head := get(t, h, http.MethodHead, target); head.Code != http.StatusOK || head.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d with %d bytes", target, head.Code, head.Body.Len())
		}
	}
	err := fs.WalkDir(files(), "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rec := get(t, h, http.MethodGet, "/"+p)
		if rec.Code != http.StatusOK {
			t.Errorf("GET /%s: %d", p, rec.Code)
		}
		ct, _ := contentType(path.Ext(p))
		if got := rec.Header().Get("Content-Type"); got != ct {
			t.Errorf("GET /%s: Content-Type %q, want %q", p, got, ct)
		}
		checkSecurityHeaders(t, "/"+p, rec)
		etag := rec.Header().Get("ETag")
		if again := get(t, h, http.MethodGet, "/"+p, "If-None-Match", etag); etag == "" || again.Code != http.StatusNotModified {
			t.Errorf("GET /%s with If-None-Match %q: %d, want 304", p, etag, again.Code)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/nope", "/assets/nope.js", "/tasks/a/b/c", "/index.html", "/evals/a/b"} {
		rec := get(t, h, http.MethodGet, target)
		if rec.Code != http.StatusNotFound || rec.Body.String() != string(rendered["notfound.html"]) ||
			!strings.Contains(rec.Body.String(), "Page not found") {
			t.Errorf("GET %s: %d, want the 404 page", target, rec.Code)
		}
		checkSecurityHeaders(t, target, rec)
	}
	if rec := get(t, h, http.MethodPost, "/settings"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /settings: %d, want 405", rec.Code)
	}
}

var (
	scriptTag   = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	eventAttr   = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	styleAttr   = regexp.MustCompile(`(?i)\sstyle\s*=`)
	styleTag    = regexp.MustCompile(`(?i)<style\b`)
	localRef    = regexp.MustCompile(`(?i)\s(?:src|href)="(/[^"]*)"`)
	jsImport    = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'`)
	cssURL      = regexp.MustCompile(`url\(\s*['"]?([^'")]+)`)
	unsafeJS    = regexp.MustCompile(`\binnerHTML\b|\bouterHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setAttribute\(\s*'style'|\bsetTimeout\(\s*['"]`)
	externalRef = regexp.MustCompile(`(?i)(?:src|href)="(?:https?:)?//`)
)

// htmlFiles returns the pages as served: every embedded page but the layout,
// rendered into the layout.
func htmlFiles(t *testing.T) map[string]string {
	t.Helper()
	matches, err := fs.Glob(files(), "*.html")
	if err != nil || len(matches) < 2 || !slices.Contains(matches, layoutFile) {
		t.Fatalf("no layout and pages: %v %v", matches, err)
	}
	matches = slices.DeleteFunc(matches, func(m string) bool { return m == layoutFile })
	if got := slices.Sorted(maps.Keys(rendered)); !slices.Equal(got, matches) {
		t.Fatalf("rendered %v, the embedded pages are %v", got, matches)
	}
	out := map[string]string{}
	for _, m := range matches {
		out[m] = string(rendered[m])
	}
	return out
}

func exists(p string) bool {
	_, err := fs.Stat(files(), strings.TrimPrefix(p, "/"))
	return err == nil
}

// TestNoInlineScriptOrStyle: pages load scripts only from files (as
// modules), with no inline script, event handler attribute, inline style or
// third-party reference; and each has the page frame (language, title,
// viewport, main landmark, the kill switch).
func TestNoInlineScriptOrStyle(t *testing.T) {
	for name, page := range htmlFiles(t) {
		scripts := scriptTag.FindAllStringSubmatch(page, -1)
		if len(scripts) == 0 {
			t.Errorf("%s has no script (the kill switch needs one)", name)
		}
		for _, s := range scripts {
			if strings.TrimSpace(s[2]) != "" || !strings.Contains(s[1], `src="/assets/`) || !strings.Contains(s[1], `type="module"`) {
				t.Errorf("%s: inline or non-module script %q", name, s[0])
			}
		}
		if strings.Count(strings.ToLower(page), "<script") != len(scripts) {
			t.Errorf("%s: a script tag that is not a plain <script src></script>", name)
		}
		for _, re := range []*regexp.Regexp{eventAttr, styleAttr, styleTag, externalRef} {
			if m := re.FindString(page); m != "" {
				t.Errorf("%s: %q is not allowed", name, m)
			}
		}
		if strings.Contains(strings.ToLower(page), "javascript:") {
			t.Errorf("%s: javascript: URL", name)
		}
		for _, want := range []string{`<html lang="en">`, "<title>", `name="viewport"`, `<main id="main">`, `id="kill-switch"`, `class="skip" href="#main"`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %s", name, want)
			}
		}
	}
}

// TestEveryReferenceExists: every local src/href of the pages, every
// module import of the scripts and every url() of the styles names an
// embedded file.
func TestEveryReferenceExists(t *testing.T) {
	routes := []string{"/", "/schedules", "/environments", "/evals", "/settings", "/welcome"}
	for name, page := range htmlFiles(t) {
		for _, m := range localRef.FindAllStringSubmatch(page, -1) {
			ref := strings.SplitN(strings.SplitN(m[1], "#", 2)[0], "?", 2)[0]
			if strings.HasPrefix(ref, "/api/") || slices.Contains(routes, ref) {
				continue
			}
			if !exists(ref) {
				t.Errorf("%s references %s, which is not embedded", name, m[1])
			}
		}
	}
	err := fs.WalkDir(files(), "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(files(), p)
		src := string(b)
		switch path.Ext(p) {
		case ".js":
			for _, m := range jsImport.FindAllStringSubmatch(src, -1) {
				if !strings.HasPrefix(m[1], "./") || !exists(path.Join(path.Dir(p), m[1])) {
					t.Errorf("%s imports %s, which is not an embedded module next to it", p, m[1])
				}
			}
			if m := unsafeJS.FindString(src); m != "" {
				t.Errorf("%s uses %q: build elements and text nodes instead", p, m)
			}
		case ".css":
			for _, m := range cssURL.FindAllStringSubmatch(src, -1) {
				if !strings.HasPrefix(m[1], "data:") && !exists(path.Join(path.Dir(p), m[1])) {
					t.Errorf("%s references %s, which is not embedded", p, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every page's module is referenced by a page (no stray scripts).
	all := strings.Join(slices.Collect(func(yield func(string) bool) {
		for _, p := range htmlFiles(t) {
			if !yield(p) {
				return
			}
		}
	}), "\n")
	scripts, _ := fs.Glob(files(), "assets/*.js")
	for _, s := range scripts {
		if !strings.Contains(all, "/"+s) {
			b, _ := fs.ReadFile(files(), s)
			imported := false
			for _, other := range scripts {
				ob, _ := fs.ReadFile(files(), other)
				imported = imported || strings.Contains(string(ob), "'./"+path.Base(s)+"'")
			}
			if !imported {
				t.Errorf("%s (%d bytes) is used by no page", s, len(b))
			}
		}
	}
}

// TestToolListMatchesTheHelper: the tools Settings offers for the policy
// are the helper's.
func TestToolListMatchesTheHelper(t *testing.T) {
	b, err := fs.ReadFile(files(), "assets/tools.js")
	if err != nil {
		t.Fatal(err)
	}
	list := func(name string) []string {
		block := regexp.MustCompile(`(?s)` + name + ` = \[(.*?)\]`).FindStringSubmatch(string(b))
		if block == nil {
			t.Fatalf("tools.js has no %s", name)
		}
		var got []string
		for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(block[1], -1) {
			got = append(got, m[1])
		}
		return got
	}
	if got := list("AGENT_TOOLS"); !slices.Equal(got, config.AgentTools) {
		t.Errorf("tools.js lists %v, the helper %v", got, config.AgentTools)
	}
	if got := list("HOST_TOOLS"); !slices.Equal(got, config.HostToolNames) {
		t.Errorf("tools.js lists the host tools %v, the helper %v", got, config.HostToolNames)
	}
	if !strings.Contains(string(b), "'"+config.OpenTerminal+"'") {
		t.Errorf("tools.js lacks %s", config.OpenTerminal)
	}
}

// TestProviderTypesMatchTheHelper: the provider types the pages offer,
// their order, vendor base URLs and default APIs, are the helper's.
func TestProviderTypesMatchTheHelper(t *testing.T) {
	b, err := fs.ReadFile(files(), "assets/providertypes.js")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, m := range regexp.MustCompile(`\{ type: '([^']+)', label: '[^']+', baseURL: '([^']*)', backend: '([^']+)' \}`).FindAllStringSubmatch(string(b), -1) {
		types = append(types, m[1])
		if m[2] != llm.DefaultBaseURL(m[1]) || m[3] != llm.DefaultBackend(m[1]) {
			t.Errorf("providertypes.js: %s at %q on %s; the helper: %q on %s", m[1], m[2], m[3], llm.DefaultBaseURL(m[1]), llm.DefaultBackend(m[1]))
		}
	}
	if !slices.Equal(types, llm.Types) {
		t.Errorf("providertypes.js offers %v, the helper %v", types, llm.Types)
	}
}

// TestPagesShareTheLayout: the head and the chrome (top bar, main nav, kill
// switch, skip link, toasts) are written once, in the layout; every served
// page has each of them exactly once, and the main nav marks the page's own
// item current and no other.
func TestPagesShareTheLayout(t *testing.T) {
	chrome := []string{"<!doctype", "<html", "<head>", "<header", "<body", "<script", `rel="icon"`, `rel="stylesheet"`, "<title", "<main", `class="skip"`,
		`class="topbar"`, `aria-label="Main"`, `id="kill-switch"`, `id="toasts"`}
	for name := range htmlFiles(t) {
		src, err := fs.ReadFile(files(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chrome {
			if strings.Contains(strings.ToLower(string(src)), strings.ToLower(c)) {
				t.Errorf("%s repeats the layout's %s", name, c)
			}
		}
	}
	current := map[string]string{"index.html": "/", "schedules.html": "/schedules", "environments.html": "/environments", "settings.html": "/settings",
		"evals.html": "/evals", "eval.html": "/evals", "vm.html": "/environments",
		"task.html": "", "replay.html": "", "compare.html": "", "welcome.html": "", "notfound.html": ""}
	navLink := regexp.MustCompile(`<a href="(/[a-z]*)"( aria-current="page")?>`)
	pages := htmlFiles(t)
	if !slices.Equal(slices.Sorted(maps.Keys(pages)), slices.Sorted(maps.Keys(current))) {
		t.Fatalf("pages %v: say which nav item each marks current", slices.Sorted(maps.Keys(pages)))
	}
	for name, page := range pages {
		for _, c := range append(chrome, `<main id="main">`, "</main>", "</head>", "</body>", "</html>") {
			if n := strings.Count(strings.ToLower(page), strings.ToLower(c)); n != 1 {
				t.Errorf("%s has %s %d times, want once", name, c, n)
			}
		}
		nav := page[strings.Index(page, `aria-label="Main"`):]
		nav = nav[:strings.Index(nav, "</nav>")]
		var marked []string
		links := navLink.FindAllStringSubmatch(nav, -1)
		for _, m := range links {
			if m[2] != "" {
				marked = append(marked, m[1])
			}
		}
		want := []string{}
		if current[name] != "" {
			want = []string{current[name]}
		}
		if len(links) != len(navItems) || !slices.Equal(marked, want) {
			t.Errorf("%s: main nav %d links, current %v, want %v", name, len(links), marked, want)
		}
	}
}

// TestMalformedPagesAreRefused: rendering fails, naming the page, when a
// page does not parse, lacks a part the layout needs, defines a part the
// layout does not use, has markup outside its parts, names a script that is
// not an embedded module, or a nav item there is not; and a well-formed page
// beside the same layout renders.
func TestMalformedPagesAreRefused(t *testing.T) {
	layout, err := fs.ReadFile(files(), layoutFile)
	if err != nil {
		t.Fatal(err)
	}
	const good = `{{define "title"}}Good{{end}}{{define "script"}}good.js{{end}}{{define "nav"}}settings{{end}}` +
		`{{define "main"}}<p id="good-main">hi</p>{{end}}{{define "after-main"}}<footer id="good-foot"></footer>{{end}}`
	fsys := func(page string) fstest.MapFS {
		return fstest.MapFS{
			layoutFile:       {Data: layout},
			"page.html":      {Data: []byte(page)},
			"assets/good.js": {Data: []byte("export {};\n")},
			"assets/app.css": {Data: []byte("")},
		}
	}
	out, err := renderPages(fsys(good))
	if err != nil {
		t.Fatalf("a good page: %v", err)
	}
	page := string(out["page.html"])
	for _, want := range []string{"<title>Good — Hivecrew</title>", `<script type="module" src="/assets/good.js"></script>`,
		`<main id="main"><p id="good-main">hi</p>  </main><footer id="good-foot"></footer>`, `<a href="/settings" aria-current="page">Settings</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("a good page lacks %s:\n%s", want, page)
		}
	}
	bad := map[string]string{
		"does not parse":     strings.Replace(good, `{{end}}{{define "main"}}`, `{{define "main"}}`, 1),
		"no title":           strings.Replace(good, `{{define "title"}}Good{{end}}`, "", 1),
		"empty title":        strings.Replace(good, `{{define "title"}}Good{{end}}`, `{{define "title"}} {{end}}`, 1),
		"no script":          strings.Replace(good, `{{define "script"}}good.js{{end}}`, "", 1),
		"no main":            strings.Replace(good, `{{define "main"}}<p id="good-main">hi</p>{{end}}`, "", 1),
		"misspelt part":      strings.Replace(good, `"after-main"`, `"after_main"`, 1),
		"overrides layout":   good + `{{define "layout.html"}}x{{end}}`,
		"markup outside":     good + `<p>lost</p>`,
		"action outside":     good + `{{.Script}}`,
		"missing script":     strings.Replace(good, "good.js", "gone.js", 1),
		"script not a name":  strings.Replace(good, "good.js", "../good.js", 1),
		"script not modules": strings.Replace(good, "good.js", "app.css", 1),
		"unknown nav":        strings.Replace(good, `{{define "nav"}}settings{{end}}`, `{{define "nav"}}replay{{end}}`, 1),
	}
	for what, src := range bad {
		if _, err := renderPages(fsys(src)); err == nil || !strings.Contains(err.Error(), "page.html") {
			t.Errorf("%s: err %v, want one naming page.html", what, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	noLayout := fsys(good)
	delete(noLayout, layoutFile)
	if _, err := renderPages(noLayout); err == nil {
		t.Error("no layout: rendered")
	}
	onlyLayout := fsys(good)
	delete(onlyLayout, "page.html")
	if _, err := renderPages(onlyLayout); err == nil {
		t.Error("no pages: rendered")
	}
}

// TestPartialsAreShared: the new-task form's fields are written once, in
// a partial, and both pages that have the form render them once each; a
// partial with markup outside its parts, or that defines a part the layout
// or a page uses, is refused, and so is a page that defines a partial's
// part; a page may use a partial's part.
func TestPartialsAreShared(t *testing.T) {
	for _, page := range []string{"index.html", "schedules.html"} {
		for _, id := range []string{`id="task-description"`, `id="task-provider"`, `id="drop-zone"`, `id="tool-policy"`, `id="task-plan-first"`} {
			if n := strings.Count(string(rendered[page]), id); n != 1 {
				t.Errorf("%s has %s %d times, want once", page, id, n)
			}
		}
		src, _ := fs.ReadFile(files(), page)
		if strings.Contains(string(src), `id="task-description"`) {
			t.Errorf("%s writes the form's fields itself instead of using the partial", page)
		}
	}
	layout, err := fs.ReadFile(files(), layoutFile)
	if err != nil {
		t.Fatal(err)
	}
	const page = `{{define "title"}}P{{end}}{{define "script"}}p.js{{end}}{{define "main"}}<form>{{template "fields" .}}</form>{{end}}`
	const partial = `{{define "fields"}}<input id="shared">{{end}}`
	fsys := func(page, partial string) fstest.MapFS {
		return fstest.MapFS{
			layoutFile:          {Data: layout},
			"page.html":         {Data: []byte(page)},
			"partials/one.tmpl": {Data: []byte(partial)},
			"assets/p.js":       {Data: []byte("export {};\n")},
		}
	}
	out, err := renderPages(fsys(page, partial))
	if err != nil || !strings.Contains(string(out["page.html"]), `<form><input id="shared"></form>`) {
		t.Fatalf("a page using a partial: %v\n%s", err, out["page.html"])
	}
	for what, m := range map[string]fstest.MapFS{
		"markup outside":         fsys(page, partial+`<p>lost</p>`),
		"a layout part":          fsys(page, partial+`{{define "main"}}x{{end}}`),
		"the layout itself":      fsys(page, partial+`{{define "layout.html"}}x{{end}}`),
		"a page's optional part": fsys(page, partial+`{{define "after-main"}}x{{end}}`),
		"a page redefines it":    fsys(page+`{{define "fields"}}y{{end}}`, partial),
	} {
		if _, err := renderPages(m); err == nil {
			t.Errorf("%s: rendered", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
}
