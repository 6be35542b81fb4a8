package linux

import (
	"context"
	"strings"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// windowApp is what EWMH and ICCCM properties say about a window.
type windowApp struct {
	name, class, title string
	pid                int
}

func (d *Driver) property(win xproto.Window, name string, typ xproto.Atom) []byte {
	r, err := xproto.GetProperty(d.conn, false, win, d.atoms.get(name), typ, 0, 1<<16).Reply()
	if err != nil || r == nil {
		return nil
	}
	return r.Value
}

func (d *Driver) windowInfo(win xproto.Window) windowApp {
	var w windowApp
	if v := d.property(win, "_NET_WM_PID", xproto.AtomCardinal); len(v) >= 4 {
		w.pid = int(xgb.Get32(v))
	}
	if v := d.property(win, "WM_CLASS", xproto.AtomString); len(v) > 0 {
		parts := strings.Split(strings.TrimRight(string(v), "\x00"), "\x00")
		w.class = parts[0]
		w.name = parts[len(parts)-1]
	}
	if v := d.property(win, "_NET_WM_NAME", d.atoms.get("UTF8_STRING")); len(v) > 0 {
		w.title = string(v)
	} else if v := d.property(win, "WM_NAME", xproto.AtomString); len(v) > 0 {
		w.title = string(v)
	}
	if w.name == "" {
		w.name = w.title
	}
	return w
}

// FrontmostApp implements server.Driver from _NET_ACTIVE_WINDOW.
func (d *Driver) FrontmostApp(ctx context.Context) (protocol.FrontmostApp, error) {
	v := d.property(d.root, "_NET_ACTIVE_WINDOW", xproto.AtomWindow)
	if len(v) < 4 || xgb.Get32(v) == 0 {
		return protocol.FrontmostApp{}, protocol.Errorf(protocol.CodeNotFound, "no active window (is a window manager running?)")
	}
	w := d.windowInfo(xproto.Window(xgb.Get32(v)))
	return protocol.FrontmostApp{Name: w.name, BundleID: w.class, PID: w.pid, WindowTitle: w.title}, nil
}

// RunningApps implements server.Driver from _NET_CLIENT_LIST: one entry per
// process with a managed window.
func (d *Driver) RunningApps(ctx context.Context) (protocol.RunningApps, error) {
	v := d.property(d.root, "_NET_CLIENT_LIST", xproto.AtomWindow)
	if v == nil && d.property(d.root, "_NET_SUPPORTING_WM_CHECK", xproto.AtomWindow) == nil {
		return protocol.RunningApps{}, protocol.Errorf(protocol.CodeUnavailable, "no EWMH window manager is running")
	}
	out := protocol.RunningApps{Apps: []protocol.App{}}
	type app struct {
		name string
		pid  int
	}
	seen := map[app]bool{}
	for i := 0; i+4 <= len(v); i += 4 {
		w := d.windowInfo(xproto.Window(xgb.Get32(v[i:])))
		key := app{w.name, w.pid}
		if seen[key] {
			continue
		}
		seen[key] = true
		out.Apps = append(out.Apps, protocol.App{Name: w.name, BundleID: w.class, PID: w.pid})
	}
	return out, nil
}
