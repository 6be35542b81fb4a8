// Package web is the helper's web UI: plain HTML, CSS and JavaScript
// modules embedded in the binary, with no build step and no third-party
// script. The pages talk only to the REST API of core/api/API.md, signed in by
// the HttpOnly session cookie a one-time login link sets.
//
// Pages: the dashboard (/), an agent window per task (/tasks/{id}), its
// session replay (/tasks/{id}/replay), the schedules (/schedules), the
// environments view (/environments), a developer VM's screen (/vms/{id}),
// the evaluation runs (/evals) and one
// run (/evals/{id}), settings (/settings) and onboarding (/welcome). The
// pages share one frame, static/layout.html (head, top bar, kill switch);
// each static/NAME.html holds only what differs and is rendered into it
// once, when the package initialises, with the parts pages share
// (static/partials/*.tmpl: the new-task form's fields). Every answer carries a strict Content-Security-Policy (scripts, styles and
// connections from this origin only, no inline script or style, no framing),
// nosniff and no-referrer.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"
)

// ContentSecurityPolicy is the policy of every page and asset.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed static
var static embed.FS

// pages maps the UI's routes to their pages (static/NAME.html rendered into
// the layout).
func pages() map[string]string {
	return map[string]string{
		"GET /{$}":               "index.html",
		"GET /tasks/{id}":        "task.html",
		"GET /tasks/{id}/replay": "replay.html",
		"GET /batches/{id}":      "compare.html",
		"GET /environments":      "environments.html",
		"GET /vms/{id}":          "vm.html",
		"GET /evals":             "evals.html",
		"GET /evals/{id}":        "eval.html",
		"GET /schedules":         "schedules.html",
		"GET /settings":          "settings.html",
		"GET /welcome":           "welcome.html",
	}
}

// contentType is the type of a file the UI is made of, by extension.
func contentType(ext string) (string, bool) {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8", true
	case ".css":
		return "text/css; charset=utf-8", true
	case ".js":
		return "text/javascript; charset=utf-8", true
	case ".svg":
		return "image/svg+xml", true
	case ".png":
		return "image/png", true
	}
	return "", false
}

// files returns the embedded files of the UI, rooted at static/.
func files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree always has static/
	}
	return sub
}

// layoutFile is the frame in static/ that every other top-level *.html is
// rendered into.
const layoutFile = "layout.html"

// Templates a page defines: all of pageRequired, any of pageOptional, and no
// others (a misspelt one would otherwise drop its markup without a word).
var (
	pageRequired = []string{"title", "script", "main"}
	pageOptional = []string{"nav", "after-main"}
	navItems     = []string{"dashboard", "schedules", "environments", "evals", "settings"}
)

// layoutData is what the layout reads of a page besides its templates.
type layoutData struct {
	Script string // the page's module, a file name in assets/
	Nav    string // the main nav's current item, or ""
}

// rendered holds every page, by file name, rendered into the layout when the
// package initialises: a malformed page stops the helper (and every test)
// here rather than serving a broken UI.
var rendered = mustRenderPages(files())

func mustRenderPages(fsys fs.FS) map[string][]byte {
	out, err := renderPages(fsys)
	if err != nil {
		panic(err)
	}
	return out
}

// partialFiles are the parts several pages share (the new-task form's
// fields, say): each defines templates a page may use with {{template}},
// and nothing outside them. They are parsed with the layout, so a page
// cannot define a part of the same name.
const partialFiles = "partials/*.tmpl"

// renderPages renders each top-level *.html of fsys but the layout into the
// layout, with the partials.
func renderPages(fsys fs.FS) (map[string][]byte, error) {
	layout, err := template.ParseFS(fsys, layoutFile)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	partials, err := fs.Glob(fsys, partialFiles)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	for _, p := range partials {
		if layout, err = parsePartial(fsys, layout, p); err != nil {
			return nil, fmt.Errorf("web: partial %s: %w", p, err)
		}
	}
	names, err := fs.Glob(fsys, "*.html")
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	out := map[string][]byte{}
	for _, name := range names {
		if name == layoutFile {
			continue
		}
		b, err := renderPage(fsys, layout, name)
		if err != nil {
			return nil, fmt.Errorf("web: page %s: %w", name, err)
		}
		out[name] = b
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("web: no pages beside %s", layoutFile)
	}
	return out, nil
}

// definitions parses a file alone, to see exactly what it defines: its
// source, its templates, and the names of its {{define}}s. Markup outside
// them is an error.
func definitions(fsys fs.FS, name string) (string, *template.Template, []string, error) {
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", nil, nil, err
	}
	own, err := template.New(name).Parse(string(src))
	if err != nil {
		return "", nil, nil, err
	}
	var names []string
	for _, d := range own.Templates() {
		if d.Name() != name {
			names = append(names, d.Name())
		} else if d.Tree != nil && !parse.IsEmptyTree(d.Tree.Root) {
			return "", nil, nil, fmt.Errorf("markup outside a {{define}}")
		}
	}
	return string(src), own, names, nil
}

// parsePartial adds a partial's templates to the layout: only
// {{define}}s, none the layout or another partial has.
func parsePartial(fsys fs.FS, layout *template.Template, name string) (*template.Template, error) {
	src, _, names, err := definitions(fsys, name)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if layout.Lookup(n) != nil || slices.Contains(pageRequired, n) || slices.Contains(pageOptional, n) {
			return nil, fmt.Errorf("defines %q, which is taken", n)
		}
	}
	return layout.New(name).Parse(src)
}

// renderPage checks one page's templates and renders it into (a copy of)
// the layout.
func renderPage(fsys fs.FS, layout *template.Template, name string) ([]byte, error) {
	// Alone first, to see exactly what the page itself defines.
	src, own, names, err := definitions(fsys, name)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if !slices.Contains(pageRequired, n) && !slices.Contains(pageOptional, n) {
			return nil, fmt.Errorf("defines %q, which the layout does not use", n)
		}
	}
	for _, req := range pageRequired {
		d := own.Lookup(req)
		if d == nil || d.Tree == nil || parse.IsEmptyTree(d.Tree.Root) {
			return nil, fmt.Errorf("does not define %q, or it is empty", req)
		}
	}
	t, err := layout.Clone()
	if err != nil {
		return nil, err
	}
	if _, err := t.New(name).Parse(src); err != nil {
		return nil, err
	}
	var data layoutData
	if data.Script, err = executeString(t, "script"); err != nil {
		return nil, err
	}
	if path.Base(data.Script) != data.Script || path.Ext(data.Script) != ".js" {
		return nil, fmt.Errorf("script %q is not a module file name", data.Script)
	}
	if _, err := fs.Stat(fsys, path.Join("assets", data.Script)); err != nil {
		return nil, fmt.Errorf("script %q is not in assets/", data.Script)
	}
	if t.Lookup("nav") != nil {
		if data.Nav, err = executeString(t, "nav"); err != nil {
			return nil, err
		}
		if !slices.Contains(navItems, data.Nav) {
			return nil, fmt.Errorf("nav %q is none of %v", data.Nav, navItems)
		}
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, layoutFile, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// executeString returns the trimmed output of one of t's templates.
func executeString(t *template.Template, name string) (string, error) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, nil); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// asset is one file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// newAsset is body ready to serve; its ETag is a hash of exactly the bytes
// served.
func newAsset(body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	return asset{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// Handler serves the pages and their assets (GET and HEAD); anything else
// is a 404 page. Nothing it serves needs a session: the pages ask the API,
// and show how to sign in when it refuses them.
func Handler() http.Handler {
	fsys := files()
	assets := map[string]asset{}
	err := fs.WalkDir(fsys, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct, ok := contentType(path.Ext(p))
		if !ok {
			return fmt.Errorf("web: no content type for %s", p)
		}
		assets[p] = newAsset(b, ct)
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time; the tests read it all
	}
	htmlType, _ := contentType(".html")
	page := func(name string) asset {
		b, ok := rendered[name]
		if !ok {
			panic("web: no page " + name) // a route without its page; the tests request every route
		}
		return newAsset(b, htmlType)
	}
	mux := http.NewServeMux()
	for pattern, file := range pages() {
		a := page(file)
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { serve(w, r, a, http.StatusOK) })
	}
	notFound := page("notfound.html")
	mux.HandleFunc("GET /assets/{name...}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets["assets/"+r.PathValue("name")]
		if !ok {
			serve(w, r, notFound, http.StatusNotFound)
			return
		}
		serve(w, r, a, http.StatusOK)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, assets["assets/icon.svg"], http.StatusOK)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				securityHeaders(w.Header())
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			serve(w, r, notFound, http.StatusNotFound)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// securityHeaders sets the headers every answer carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// serve writes one file. Files are revalidated on every use (their ETag
// changes with their contents), so a new helper never serves a stale page.
func serve(w http.ResponseWriter, r *http.Request, a asset, status int) {
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "no-cache")
	if status == http.StatusOK {
		h.Set("ETag", a.etag)
		if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(a.body)
	}
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
