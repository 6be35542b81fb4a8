package fake

import (
	"context"
	"image"
	"image/color"
	"path/filepath"
	"sync"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// Action is one input action the fake guest received, in logical points.
type Action struct {
	Kind      string // "move", "click", "drag", "down", "up", "scroll", "type", "key", "keydown", "keyup", "open_app", "open_file", "open_url"
	X, Y      float64
	Button    string
	Count     int
	Text      string
	Modifiers []string
}

// Widget is a rectangle the fake screen draws, in logical points.
type Widget struct {
	Name  string
	Frame protocol.Rect
	Color color.RGBA
}

// Driver is a guest driver with a synthetic screen that records what it is
// asked to do. Upper layers test coordinate mapping and tool execution
// against it; the real drivers are tested end to end.
type Driver struct {
	screen protocol.Screen

	// mu guards everything below.
	mu        sync.Mutex
	widgets   []Widget
	actions   []Action
	clipboard string
	// x, y is where the pointer is.
	x, y float64
	// denied are the OS permissions the guest reports missing (as a
	// macOS guest without its TCC grants would).
	denied protocol.Permissions
}

// DenyPermissions makes the guest report the permissions set in p as
// missing (health_check's problems name them), until called again.
func (d *Driver) DenyPermissions(p protocol.Permissions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied = p
}

var _ server.Driver = (*Driver)(nil)

// NewDriver returns a driver with a screen of w x h points at scale.
func NewDriver(w, h int, scale float64) *Driver {
	return &Driver{screen: protocol.Screen{Width: w, Height: h, Scale: scale}}
}

// SetWidgets replaces what the screen shows.
func (d *Driver) SetWidgets(ws []Widget) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.widgets = append([]Widget(nil), ws...)
}

// Actions returns what the driver was asked to do, in order.
func (d *Driver) Actions() []Action {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Action(nil), d.actions...)
}

func (d *Driver) record(a Action) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.actions = append(d.actions, a)
	return nil
}

// recordAt records a, which leaves the pointer at its point.
func (d *Driver) recordAt(a Action) error {
	d.mu.Lock()
	d.x, d.y = a.X, a.Y
	d.mu.Unlock()
	return d.record(a)
}

// WidgetAt returns the widget under a point, if any.
func (d *Driver) WidgetAt(x, y float64) (Widget, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.widgets) - 1; i >= 0; i-- {
		f := d.widgets[i].Frame
		if x >= f.X && x < f.X+f.W && y >= f.Y && y < f.Y+f.H {
			return d.widgets[i], true
		}
	}
	return Widget{}, false
}

func (d *Driver) Screen() protocol.Screen { return d.screen }

func (d *Driver) Describe(context.Context) (server.Description, error) {
	d.mu.Lock()
	denied := d.denied
	d.mu.Unlock()
	desc := server.Description{
		OS: "linux", OSVersion: "fake", Screen: d.screen,
		Capabilities: []string{protocol.CapScreenshot, protocol.CapInput, protocol.CapInputV2, protocol.CapAccessibility, protocol.CapClipboard, protocol.CapApps},
		Permissions:  protocol.Permissions{ScreenRecording: !denied.ScreenRecording, Accessibility: !denied.Accessibility},
	}
	if denied.ScreenRecording {
		desc.Problems = append(desc.Problems, "Screen Recording permission is missing")
	}
	if denied.Accessibility {
		desc.Problems = append(desc.Problems, "Accessibility permission is missing")
	}
	return desc, nil
}

// Capture draws the widgets at the screen's pixel scale on a grey desktop.
func (d *Driver) Capture(context.Context) (image.Image, error) {
	s := d.screen.Scale
	img := image.NewRGBA(image.Rect(0, 0, int(float64(d.screen.Width)*s), int(float64(d.screen.Height)*s)))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 0x30, 0x30, 0x30, 0xff
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.widgets {
		r := image.Rect(int(w.Frame.X*s), int(w.Frame.Y*s), int((w.Frame.X+w.Frame.W)*s), int((w.Frame.Y+w.Frame.H)*s))
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				img.SetRGBA(x, y, w.Color)
			}
		}
	}
	return img, nil
}

func (d *Driver) AccessibilityTree(context.Context, protocol.AccessibilityParams) (protocol.AccessibilityResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	app := protocol.Node{ID: "app", Role: "application", Name: "Fake"}
	for _, w := range d.widgets {
		app.Children = append(app.Children, protocol.Node{ID: w.Name, Role: "push button", Name: w.Name, Frame: w.Frame})
	}
	return protocol.AccessibilityResult{Nodes: []protocol.Node{app}}, nil
}

func (d *Driver) FrontmostApp(context.Context) (protocol.FrontmostApp, error) {
	return protocol.FrontmostApp{Name: "Fake", PID: 1}, nil
}

func (d *Driver) RunningApps(context.Context) (protocol.RunningApps, error) {
	return protocol.RunningApps{Apps: []protocol.App{{Name: "Fake", PID: 1}}}, nil
}

func (d *Driver) MouseMove(_ context.Context, x, y float64) error {
	return d.recordAt(Action{Kind: "move", X: x, Y: y})
}

func (d *Driver) MouseClick(_ context.Context, x, y float64, button string, count int, mods []string) error {
	return d.recordAt(Action{Kind: "click", X: x, Y: y, Button: button, Count: count, Modifiers: mods})
}

func (d *Driver) MouseDrag(_ context.Context, p protocol.DragParams) error {
	return d.recordAt(Action{Kind: "drag", X: p.ToX, Y: p.ToY})
}

// MouseButton records "down" or "up" at the pointer.
func (d *Driver) MouseButton(_ context.Context, button string, down bool) error {
	d.mu.Lock()
	a := Action{Kind: "up", X: d.x, Y: d.y, Button: button}
	d.mu.Unlock()
	if down {
		a.Kind = "down"
	}
	return d.record(a)
}

func (d *Driver) CursorPosition(context.Context) (protocol.CursorPosition, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return protocol.CursorPosition{X: d.x, Y: d.y}, nil
}

func (d *Driver) Scroll(_ context.Context, p protocol.ScrollParams) error {
	return d.recordAt(Action{Kind: "scroll", X: p.X, Y: p.Y, Modifiers: p.Modifiers})
}

func (d *Driver) TypeText(_ context.Context, text string) error {
	return d.record(Action{Kind: "type", Text: text})
}

func (d *Driver) PressKey(_ context.Context, key string, mods []string) error {
	return d.record(Action{Kind: "key", Text: key, Modifiers: mods})
}

// KeyDown records "keydown", and its release "keyup".
func (d *Driver) KeyDown(_ context.Context, key string, mods []string) (func(context.Context) error, error) {
	d.record(Action{Kind: "keydown", Text: key, Modifiers: mods})
	return func(context.Context) error { return d.record(Action{Kind: "keyup", Text: key, Modifiers: mods}) }, nil
}

func (d *Driver) OpenApp(_ context.Context, name string) error {
	return d.record(Action{Kind: "open_app", Text: name})
}

func (d *Driver) OpenFile(_ context.Context, path, app string) error {
	return d.record(Action{Kind: "open_file", Text: path})
}

func (d *Driver) OpenURL(_ context.Context, url string) error {
	return d.record(Action{Kind: "open_url", Text: url})
}

func (d *Driver) ClipboardRead(context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.clipboard, nil
}

func (d *Driver) ClipboardWrite(_ context.Context, text string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clipboard = text
	return nil
}

func (d *Driver) PowerOff(context.Context) error { return nil }

// warming is a Driver that brings part of its desktop up after its first
// hello (Options.Warm).
type warming struct {
	*Driver
	warm func(ctx context.Context) error
}

var _ server.Warmer = warming{}

// Warm implements server.Warmer.
func (w warming) Warm(ctx context.Context) error { return w.warm(ctx) }

// resolving is a Driver that answers resolve_app from a table (Options.Apps).
type resolving struct {
	*Driver
	apps map[string]protocol.ResolvedApp
}

var _ server.AppResolver = resolving{}

// ResolveApp implements server.AppResolver.
func (r resolving) ResolveApp(_ context.Context, name, path string) (protocol.ResolvedApp, error) {
	if path != "" && name == "" {
		name = "default:" + filepath.Base(path)
	}
	return r.apps[name], nil
}
