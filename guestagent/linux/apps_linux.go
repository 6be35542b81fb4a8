package linux

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// applicationDirs lists the folders holding .desktop files, most specific first.
func applicationDirs() []string {
	var dirs []string
	if h := os.Getenv("XDG_DATA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "applications"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local/share/applications"))
	}
	data := os.Getenv("XDG_DATA_DIRS")
	if data == "" {
		data = "/usr/local/share:/usr/share"
	}
	for _, d := range strings.Split(data, ":") {
		if d != "" {
			dirs = append(dirs, filepath.Join(d, "applications"))
		}
	}
	return dirs
}

// findApp finds an application by desktop-file id ("org.xfce.mousepad"), by
// its Name ("Mousepad") or by the program it runs ("mousepad"), all without
// regard to case.
func findApp(name string) (desktopEntry, bool) {
	want := strings.ToLower(strings.TrimSuffix(name, ".desktop"))
	var byName, byProgram *desktopEntry
	for _, dir := range applicationDirs() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, ent := range ents {
			if !strings.HasSuffix(ent.Name(), ".desktop") {
				continue
			}
			e, ok := readDesktopEntry(filepath.Join(dir, ent.Name()), strings.TrimSuffix(ent.Name(), ".desktop"))
			if !ok {
				continue
			}
			switch {
			case strings.ToLower(e.ID) == want:
				return e, true
			case byName == nil && strings.ToLower(e.Name) == want:
				byName = &e
			case byProgram == nil:
				if args := execArgs(e.Exec, nil); len(args) > 0 && strings.ToLower(filepath.Base(args[0])) == want {
					byProgram = &e
				}
			}
		}
	}
	for _, e := range []*desktopEntry{byName, byProgram} {
		if e != nil {
			return *e, true
		}
	}
	return desktopEntry{}, false
}

// readDesktopEntry reads the application entry of a .desktop file.
func readDesktopEntry(file, id string) (desktopEntry, bool) {
	f, err := os.Open(file)
	if err != nil {
		return desktopEntry{}, false
	}
	defer f.Close()
	e, ok := parseDesktopEntry(id, io.LimitReader(f, maxDesktopFile))
	e.File = file
	return e, ok
}

// maxDesktopFile bounds what is read of a .desktop file.
const maxDesktopFile = 1 << 20

// appLaunch finds what OpenApp(name) starts (path empty) or what
// OpenFile(path, name) starts with a named app: the desktop entry, when
// the name finds one, and the argument vector. ok is false when neither
// an entry nor a program has the name.
func appLaunch(name, path string) (e *desktopEntry, args []string, ok bool) {
	var files []string
	if path != "" {
		files = []string{path}
	}
	if found, ok := findApp(name); ok {
		return &found, execArgs(found.Exec, files), true
	}
	if _, err := exec.LookPath(name); err != nil {
		return nil, nil, false
	}
	if path == "" && strings.ContainsAny(name, " /") {
		return nil, nil, false // open_app takes a program by its name only
	}
	return nil, append([]string{name}, files...), true
}

// programPath finds a program as the shell would (on PATH, or the path
// it is given), as an absolute path.
func programPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// windowWait bounds how long open_app and open_file wait for the opened
// application's window: a cold start of a GTK editor takes seconds, and a
// screenshot taken before its window is mapped shows the model nothing.
const windowWait = 10 * time.Second

// launch starts args detached from the agent (its own session, no terminal,
// output discarded) and reaps it when it exits. It returns once a window
// that was not there before is managed (the program's own, or one it handed
// the request to, as single-instance editors do), once the program fails,
// or after windowWait, whichever comes first. failed says a failure's
// exit status in words (nil: "exited with status N").
func (d *Driver) launch(ctx context.Context, args []string, failed func(status int) error) error {
	path, err := programPath(args[0])
	if err != nil {
		return protocol.Errorf(protocol.CodeNotFound, "program %q not found", args[0])
	}
	before := d.clients()
	cmd := exec.Command(path, args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = os.Getenv("HOME")
	if err := cmd.Start(); err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "start %s: %v", args[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if before == nil {
		return nil // no EWMH window manager to ask: nothing to wait for
	}
	deadline := time.NewTimer(windowWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.ExitCode() != 0 {
				if failed != nil {
					return failed(exit.ExitCode())
				}
				return protocol.Errorf(protocol.CodeInternalError, "%s exited with status %d", args[0], exit.ExitCode())
			}
			exited = nil // handed off (or a launcher): keep watching for the window
		case <-tick.C:
			for w := range d.clients() {
				if !before[w] {
					d.settle.Input() // the next capture waits for it to draw
					return nil
				}
			}
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// clients returns the windows the window manager manages
// (_NET_CLIENT_LIST), or nil when no EWMH window manager runs.
func (d *Driver) clients() map[xproto.Window]bool {
	if d.property(d.root, "_NET_SUPPORTING_WM_CHECK", xproto.AtomWindow) == nil {
		return nil
	}
	v := d.property(d.root, "_NET_CLIENT_LIST", xproto.AtomWindow)
	out := make(map[xproto.Window]bool, len(v)/4)
	for i := 0; i+4 <= len(v); i += 4 {
		out[xproto.Window(xgb.Get32(v[i:]))] = true
	}
	return out
}

// OpenApp implements server.Driver.
func (d *Driver) OpenApp(ctx context.Context, name string) error {
	_, args, ok := appLaunch(name, "")
	if !ok || len(args) == 0 {
		return protocol.Errorf(protocol.CodeNotFound, "no application named %q (give a desktop-file id, an application name or a program)", name)
	}
	return d.launch(ctx, args, nil)
}

// OpenFile implements server.Driver: with the named app, or xdg-open.
func (d *Driver) OpenFile(ctx context.Context, path, app string) error {
	if app == "" {
		return d.xdgOpen(ctx, path)
	}
	_, args, ok := appLaunch(app, path)
	if !ok || len(args) == 0 {
		return protocol.Errorf(protocol.CodeNotFound, "no application named %q", app)
	}
	return d.launch(ctx, args, nil)
}

// OpenURL implements server.Driver.
func (d *Driver) OpenURL(ctx context.Context, url string) error { return d.xdgOpen(ctx, url) }

// xdgOpen opens a file or URL with its default application. Without a
// desktop environment xdg-open waits for the program it starts (an
// editor, a browser) to exit, so it is launched as a program is: the call
// returns once a new window shows, xdg-open fails, or after windowWait.
func (d *Driver) xdgOpen(ctx context.Context, target string) error {
	if _, err := exec.LookPath("xdg-open"); err != nil {
		return protocol.Errorf(protocol.CodeUnsupported, "xdg-open is not installed in this guest")
	}
	return d.launch(ctx, []string{"xdg-open", target}, func(status int) error {
		if status == 3 {
			return protocol.Errorf(protocol.CodeNotFound, "no application is set up to open %s", target)
		}
		return protocol.Errorf(protocol.CodeInternalError, "xdg-open %s failed (exit %d)", target, status)
	})
}
