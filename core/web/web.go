// Package web is the helper's web UI: plain HTML, CSS and JavaScript
// modules embedded in the binary, with no build step and no third-party
// script. The pages talk only to the REST API of shared/API.md, signed in by
// the HttpOnly session cookie a one-time login link sets.
//
// Pages: the dashboard (/), an agent window per task (/tasks/{id}), its
// session replay (/tasks/{id}/replay), the environments view
// (/environments), settings (/settings) and onboarding (/welcome). Every
// answer carries a strict Content-Security-Policy (scripts, styles and
// connections from this origin only, no inline script or style, no framing),
// nosniff and no-referrer.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// ContentSecurityPolicy is the policy of every page and asset.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed static
var static embed.FS

// pages maps the UI's routes to their HTML files in static/.
func pages() map[string]string {
	return map[string]string{
		"GET /{$}":               "index.html",
		"GET /tasks/{id}":        "task.html",
		"GET /tasks/{id}/replay": "replay.html",
		"GET /environments":      "environments.html",
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

// asset is one file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the pages and their assets (GET and HEAD); anything else
// is a 404 page. Nothing it serves needs a session: the pages ask the API,
// and show how to sign in when it refuses them.
func Handler() http.Handler {
	fsys := files()
	assets := map[string]asset{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
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
		sum := sha256.Sum256(b)
		assets[p] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time; the tests read it all
	}
	mux := http.NewServeMux()
	for pattern, file := range pages() {
		a := assets[file]
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { serve(w, r, a, http.StatusOK) })
	}
	mux.HandleFunc("GET /assets/{name...}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets["assets/"+r.PathValue("name")]
		if !ok {
			serve(w, r, assets["notfound.html"], http.StatusNotFound)
			return
		}
		serve(w, r, a, http.StatusOK)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, assets["assets/icon.svg"], http.StatusOK)
	})
	notFound := assets["notfound.html"]
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
