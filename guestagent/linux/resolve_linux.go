package linux

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

var _ server.AppResolver = (*Driver)(nil)

// xdgMimeTimeout bounds one xdg-mime query.
const xdgMimeTimeout = 5 * time.Second

// ResolveApp implements server.AppResolver, on the roads OpenApp and
// OpenFile take: a desktop entry (by id, Name or program) or a program
// on PATH; for a file opened with its default application, what xdg-open
// runs when no desktop environment is named (the entry xdg-mime gives as
// the default for the file's type). A desktop environment's own opener
// (gio, exo-open, kde-open) reads the same MIME database.
func (d *Driver) ResolveApp(ctx context.Context, name, path string) (protocol.ResolvedApp, error) {
	if path != "" && name == "" {
		return defaultApp(ctx, path)
	}
	e, args, ok := appLaunch(name, path)
	if !ok || len(args) == 0 {
		return protocol.ResolvedApp{}, nil
	}
	return resolved(e, args[0]), nil
}

// resolved describes what runs: the entry, if any, and its program's
// real path. A program that is not there opens nothing.
func resolved(e *desktopEntry, program string) protocol.ResolvedApp {
	p, err := programPath(program)
	if err != nil {
		return protocol.ResolvedApp{}
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	r := protocol.ResolvedApp{Found: true, Kind: "program", Executable: p}
	if e != nil {
		r.Kind, r.ID, r.Name, r.File, r.Terminal, r.Categories = "desktop-entry", e.ID, e.Name, e.File, e.Terminal, e.Categories
		if args := execArgs(e.Exec, nil); len(args) > 1 {
			r.Args = args[1:]
		}
	}
	return r
}

// defaultApp resolves a file's default application as xdg-open's generic
// road does: the type xdg-mime reads from the file, the entry xdg-mime
// names as that type's default, found in the data folders as
// vendor-app.desktop or vendor/app.desktop, and the first word of its
// Exec on PATH. With no default entry xdg-open falls back to run-mailcap,
// mimeopen or a web browser: that is Found false, with the type.
func defaultApp(ctx context.Context, path string) (protocol.ResolvedApp, error) {
	out, err := xdgMime(ctx, "filetype", path)
	if err != nil {
		return protocol.ResolvedApp{}, err
	}
	mime, _, _ := strings.Cut(out, ";")
	r := protocol.ResolvedApp{MIME: strings.TrimSpace(mime)}
	if r.MIME == "" {
		return r, nil
	}
	out, err = xdgMime(ctx, "default", r.MIME)
	if err != nil {
		return protocol.ResolvedApp{}, err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	e, ok := desktopFile(strings.TrimSpace(id))
	if !ok {
		return r, nil
	}
	args := execArgs(e.Exec, nil)
	if len(args) == 0 {
		return r, nil
	}
	res := resolved(&e, args[0])
	res.MIME = r.MIME
	return res, nil
}

// desktopFile finds a desktop entry by its file name (vendor-app.desktop),
// also as vendor/app.desktop, in the data folders in order.
func desktopFile(name string) (desktopEntry, bool) {
	if name == "" || strings.Contains(name, "/") || !strings.HasSuffix(name, ".desktop") {
		return desktopEntry{}, false
	}
	id := strings.TrimSuffix(name, ".desktop")
	for _, dir := range applicationDirs() {
		for _, f := range []string{name, strings.Replace(name, "-", "/", 1)} {
			if e, ok := readDesktopEntry(filepath.Join(dir, f), id); ok {
				return e, true
			}
		}
	}
	return desktopEntry{}, false
}

// xdgMime runs `xdg-mime query what arg` and returns its output.
func xdgMime(ctx context.Context, what, arg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, xdgMimeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdg-mime", "query", what, arg)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "", protocol.Errorf(protocol.CodeUnsupported, "xdg-mime is not installed in this guest")
	case errors.As(err, &exit):
		return "", nil // no answer: an unknown type, no default
	case err != nil:
		return "", protocol.Errorf(protocol.CodeInternalError, "xdg-mime query %s: %v", what, err)
	}
	if len(out) > protocol.MaxResolvedString {
		out = out[:protocol.MaxResolvedString]
	}
	return string(out), nil
}
