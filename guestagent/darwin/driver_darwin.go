package darwin

/*
#cgo CFLAGS: -x objective-c -fobjc-arc -mmacosx-version-min=15.0
#cgo LDFLAGS: -framework Foundation -framework AppKit -framework ApplicationServices -framework CoreGraphics -framework CoreMedia -framework ScreenCaptureKit -framework Carbon -framework CoreServices
#include <stdlib.h>
#include "bridge_darwin.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf16"
	"unsafe"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// Config configures the driver. Log is required.
type Config struct {
	// PowerOff makes the shutdown method shut the Mac down.
	PowerOff bool
	Log      *slog.Logger
}

// Driver is the macOS driver. It is safe for concurrent use.
type Driver struct {
	cfg       Config
	osVersion string
	// buttons are the mouse buttons MouseButton holds down.
	buttons buttonsDown
	// front is the last open whose app did not come to the front.
	front frontState
	// settle makes a capture after input wait until the screen is quiet
	// (ScreenCaptureKit's frame updates, streamFrames).
	settle *settle.Settler
}

var (
	_ server.Driver     = (*Driver)(nil)
	_ server.Speculator = (*Driver)(nil)
)

// Tree limits, as on Linux.
const (
	defaultTreeDepth = 16
	maxTreeDepth     = 64
	maxTreeNodes     = 5000
	dragSteps        = 8
)

// New returns the driver and asks macOS for the Screen Recording and
// Accessibility permissions it lacks (the template's setup grants them).
func New(cfg Config) (*Driver, error) {
	if cfg.Log == nil {
		return nil, errors.New("darwin driver: Log is required")
	}
	d := &Driver{cfg: cfg, osVersion: osVersion()}
	d.settle = settle.New(settle.Config{Source: &streamFrames{}, IdleStop: framesIdleStop, Log: cfg.Log})
	if p := d.permissions(); !p.ScreenRecording || !p.Accessibility {
		cfg.Log.Warn("missing permissions; requesting them", "screenRecording", p.ScreenRecording, "accessibility", p.Accessibility)
		C.hc_request_permissions()
	}
	return d, nil
}

// framesIdleStop stops the capture stream that reports redraws after this
// long without input or capture: an idle guest records nothing.
const framesIdleStop = 10 * time.Second

// Close implements the agent's driver teardown.
func (d *Driver) Close() error {
	d.settle.Close()
	return nil
}

// RunMainLoop runs the Cocoa main run loop; call it on the main thread.
func RunMainLoop() { C.hc_run_main_loop() }

// StopMainLoop makes RunMainLoop return.
func StopMainLoop() { C.hc_stop_main_loop() }

func (d *Driver) permissions() protocol.Permissions {
	return protocol.Permissions{
		ScreenRecording: C.hc_screen_capture_allowed() != 0,
		Accessibility:   C.hc_accessibility_trusted() != 0,
	}
}

// Screen implements server.Driver: the main display in points.
func (d *Driver) Screen() protocol.Screen {
	scr := C.hc_main_screen()
	return protocol.Screen{Width: int(scr.width), Height: int(scr.height), Scale: float64(scr.scale)}
}

// Describe implements server.Driver.
func (d *Driver) Describe(ctx context.Context) (server.Description, error) {
	desc := server.Description{
		OS:        "macos",
		OSVersion: d.osVersion,
		Screen:    d.Screen(),
		Capabilities: []string{
			protocol.CapScreenshot, protocol.CapInput, protocol.CapInputV2, protocol.CapAccessibility, protocol.CapClipboard, protocol.CapApps,
		},
		Permissions: d.permissions(),
	}
	if !desc.Permissions.ScreenRecording {
		desc.Problems = append(desc.Problems, "Screen Recording permission is missing: System Settings > Privacy & Security > Screen Recording")
	}
	if !desc.Permissions.Accessibility {
		desc.Problems = append(desc.Problems, "Accessibility permission is missing: System Settings > Privacy & Security > Accessibility")
	}
	if p := d.screenApprovalProblem(ctx); p != "" {
		desc.Problems = append(desc.Problems, p)
	}
	if p := d.front.problem(); p != "" {
		desc.Problems = append(desc.Problems, p)
	}
	return desc, nil
}

// screenApprovalProblem reads the agent's Screen Recording approval date
// from replayd's defaults (ApprovalProblem says what is wrong with it).
func (d *Driver) screenApprovalProblem(ctx context.Context) string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "defaults", "read", filepath.Join(home, ApprovalsDomain), AgentPath).Output()
	return ApprovalProblem(macOSMajor(d.osVersion), string(out), err, time.Now())
}

func osVersion() string {
	out, err := exec.Command("sw_vers", "-productVersion").Output()
	if err != nil {
		return "macOS"
	}
	return "macOS " + string(trimNewline(out))
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Capture implements server.Driver with SCScreenshotManager, at the display's
// pixel size. After input it first waits for the screen to settle (until
// no frame has changed for 30 ms, 1 s at most), as on Linux.
func (d *Driver) Capture(ctx context.Context) (image.Image, error) {
	if !d.permissions().ScreenRecording {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "the guest agent lacks the Screen Recording permission")
	}
	if waited := d.settle.Wait(ctx); waited > 0 {
		d.cfg.Log.Debug("the screen settled after input", "waited", waited)
	}
	return d.CaptureNow(ctx)
}

// Settler implements server.Speculator: the state Capture waits on.
func (d *Driver) Settler() *settle.Settler { return d.settle }

// CaptureNow implements server.Speculator: Capture without the wait.
func (d *Driver) CaptureNow(ctx context.Context) (image.Image, error) {
	if !d.permissions().ScreenRecording {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "the guest agent lacks the Screen Recording permission")
	}
	shot := C.hc_capture()
	if shot.err != nil {
		msg := C.GoString(shot.err)
		C.free(unsafe.Pointer(shot.err))
		return nil, protocol.Errorf(protocol.CodeUnavailable, "capture the screen: %s", msg)
	}
	defer C.free(unsafe.Pointer(shot.pixels))
	w, h := int(shot.width), int(shot.height)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(img.Pix, unsafe.Slice((*byte)(unsafe.Pointer(shot.pixels)), w*h*4))
	return img, nil
}

// needInput refuses input while macOS would silently drop it. Callers
// note the input for the next capture once it is posted (settle.Input);
// noting it here too starts the frame source while the input is posted.
func (d *Driver) needInput() error {
	if C.hc_accessibility_trusted() == 0 {
		return protocol.Errorf(protocol.CodePermissionDenied, "the guest agent lacks the Accessibility permission, without which macOS ignores its input")
	}
	d.settle.Input()
	return nil
}

// errNoEvent is what a bridge function's -1 means.
func errNoEvent(what string) error {
	return protocol.Errorf(protocol.CodeUnavailable, "%s: macOS made no event (CGEventCreate returned NULL)", what)
}

// MouseMove implements server.Driver: a drag of the button MouseButton
// holds down, if any.
func (d *Driver) MouseMove(ctx context.Context, x, y float64) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	button := C.int(-1)
	if b := d.buttons.dragging(); b != "" {
		button = buttonIndex[b]
	}
	if C.hc_mouse_move_drag(C.double(x), C.double(y), button) != 0 {
		return errNoEvent("move the pointer")
	}
	return nil
}

var buttonIndex = map[string]C.int{protocol.ButtonLeft: 0, protocol.ButtonRight: 1, protocol.ButtonMiddle: 2}

// postKeys posts keyboard events in order; one that macOS cannot make
// does not keep the others (releases, say) from being posted.
func postKeys(events []keyEvent) error {
	failed := 0
	for _, e := range events {
		down := C.int(0)
		if e.down {
			down = 1
		}
		if C.hc_key_event(C.uint16_t(e.code), down, C.uint64_t(e.flags)) != 0 {
			failed++
		}
	}
	if failed > 0 {
		return errNoEvent(fmt.Sprintf("%d of %d key events", failed, len(events)))
	}
	return nil
}

// holding presses the keys of modifiers, runs act with their flags (for
// its events) and releases the keys, whatever act did.
func (d *Driver) holding(modifiers []string, act func(flags uint64) error) (err error) {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	press, release, flags, err := modifierEvents(modifiers)
	if err != nil {
		return protocol.Errorf(protocol.CodeInvalidParams, "%v", err)
	}
	defer func() {
		if rerr := postKeys(release); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if err := postKeys(press); err != nil {
		return err
	}
	return act(flags)
}

// MouseClick implements server.Driver.
func (d *Driver) MouseClick(ctx context.Context, x, y float64, button string, count int, modifiers []string) error {
	return d.holding(modifiers, func(flags uint64) error {
		if C.hc_mouse_click(C.double(x), C.double(y), buttonIndex[button], C.int(count), C.uint64_t(flags)) != 0 {
			return errNoEvent("click")
		}
		return nil
	})
}

// MouseButton implements server.Driver: the press or release at the
// pointer; moves while a button is down are that button's drags.
func (d *Driver) MouseButton(ctx context.Context, button string, down bool) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	cdown := C.int(0)
	if down {
		cdown = 1
	}
	if C.hc_mouse_button(buttonIndex[button], cdown) != 0 {
		return errNoEvent("press or release a mouse button")
	}
	d.buttons.set(button, down)
	return nil
}

// CursorPosition implements server.Driver: the location of an event of
// now (CGEventCreate(NULL)), in points from the main display's top left.
func (d *Driver) CursorPosition(ctx context.Context) (protocol.CursorPosition, error) {
	var x, y C.double
	if C.hc_cursor_position(&x, &y) != 0 {
		return protocol.CursorPosition{}, errNoEvent("read the pointer")
	}
	return protocol.CursorPosition{X: float64(x), Y: float64(y)}, nil
}

// MouseDrag implements server.Driver.
func (d *Driver) MouseDrag(ctx context.Context, p protocol.DragParams) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	C.hc_mouse_drag(C.double(p.FromX), C.double(p.FromY), C.double(p.ToX), C.double(p.ToY), dragSteps)
	return nil
}

// Scroll implements server.Driver.
func (d *Driver) Scroll(ctx context.Context, p protocol.ScrollParams) error {
	return d.holding(p.Modifiers, func(flags uint64) error {
		if C.hc_scroll(C.double(p.X), C.double(p.Y), C.int(lines(p.DeltaX)), C.int(lines(p.DeltaY)), C.uint64_t(flags)) != 0 {
			return errNoEvent("scroll")
		}
		return nil
	})
}

// lines rounds a scroll delta to whole lines, at least one when not zero.
func lines(delta float64) int {
	n := int(delta + 0.5)
	if delta < 0 {
		n = int(delta - 0.5)
	}
	if n == 0 && delta > 0 {
		n = 1
	} else if n == 0 && delta < 0 {
		n = -1
	}
	return n
}

// TypeText implements server.Driver: one key press per character, on the
// key the current keyboard layout types it with (typing.go), carrying
// the character too; a character no key types goes as text alone.
func (d *Driver) TypeText(ctx context.Context, text string) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	table, err := currentLayout()
	if err != nil {
		d.cfg.Log.Warn("typing every character as text", "err", err)
	}
	failed := 0
	for _, s := range typingPlan(text, table) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var units *C.uint16_t
		if len(s.text) > 0 {
			units = (*C.uint16_t)(unsafe.Pointer(&s.text[0]))
		}
		if C.hc_type_key(C.uint16_t(s.code), C.uint64_t(s.flags), units, C.int(len(s.text))) != 0 {
			failed++
		}
	}
	if failed > 0 {
		return errNoEvent(fmt.Sprintf("%d key presses", failed))
	}
	return nil
}

// currentLayout reads what the keys of the current keyboard layout type
// (read anew for each text: the user of a takeover may switch layouts).
func currentLayout() (map[rune]typedKey, error) {
	var chars [C.HC_LAYOUT_KEYS * 2 * C.HC_LAYOUT_UNITS]C.uint16_t
	var lens [C.HC_LAYOUT_KEYS * 2]C.int8_t
	switch C.hc_layout_chars(&chars[0], &lens[0]) {
	case 0:
	case -2:
		return nil, errors.New("the main thread did not read the keyboard layout within 2 s")
	default:
		return nil, errors.New("the keyboard layout has no Unicode ('uchr') data")
	}
	return layoutTable(func(code uint16, shift bool) keyOutput {
		i := int(code) * 2
		if shift {
			i++
		}
		n := int(lens[i])
		if n < 0 {
			return keyOutput{dead: true}
		}
		units := make([]uint16, n)
		for j := range units {
			units[j] = uint16(chars[i*C.HC_LAYOUT_UNITS+j])
		}
		return keyOutput{text: string(utf16.Decode(units))}
	}), nil
}

// keyError turns keyStroke's and keyEvents' errors into protocol errors.
func keyError(err error) error { return protocol.Errorf(keyErrorCode(err), "%v", err) }

// PressKey implements server.Driver. A modifier pressed as a key goes down
// and up as a modifier's key does (flags-changed events).
func (d *Driver) PressKey(ctx context.Context, key string, modifiers []string) error {
	if err := d.needInput(); err != nil {
		return err
	}
	defer d.settle.Input()
	if server.IsModifierKey(key) {
		press, release, err := keyEvents(key, modifiers)
		if err != nil {
			return keyError(err)
		}
		return errors.Join(postKeys(press), postKeys(release))
	}
	code, flags, ok, err := keyStroke(key, modifiers)
	if err != nil {
		return keyError(err)
	}
	if !ok {
		if len(modifiers) > 0 || len([]rune(key)) != 1 {
			return protocol.Errorf(protocol.CodeUnsupported, "key %q has no key code on the US layout to combine with modifiers", key)
		}
		return d.TypeText(ctx, key)
	}
	C.hc_key(C.uint16_t(code), C.uint64_t(flags))
	return nil
}

// KeyDown implements server.Driver: the modifiers' keys, then the key, as
// a hand presses them; release lets go in reverse order.
func (d *Driver) KeyDown(ctx context.Context, key string, modifiers []string) (func(context.Context) error, error) {
	if err := d.needInput(); err != nil {
		return nil, err
	}
	defer d.settle.Input()
	press, release, err := keyEvents(key, modifiers)
	if err != nil {
		return nil, keyError(err)
	}
	if err := postKeys(press); err != nil {
		return nil, errors.Join(err, postKeys(release))
	}
	return func(context.Context) error {
		defer d.settle.Input()
		return postKeys(release)
	}, nil
}

// AccessibilityTree implements server.Driver.
func (d *Driver) AccessibilityTree(ctx context.Context, p protocol.AccessibilityParams) (protocol.AccessibilityResult, error) {
	if C.hc_accessibility_trusted() == 0 {
		return protocol.AccessibilityResult{}, protocol.Errorf(protocol.CodePermissionDenied, "the guest agent lacks the Accessibility permission")
	}
	depth := p.MaxDepth
	if depth == 0 {
		depth = defaultTreeDepth
	}
	app := C.CString(p.App)
	defer C.free(unsafe.Pointer(app))
	visible := C.int(0)
	if p.OnlyVisible {
		visible = 1
	}
	var cerr *C.char
	raw := C.hc_ax_tree_json(app, C.int(min(depth, maxTreeDepth)), visible, maxTreeNodes, &cerr)
	if raw == nil {
		msg := "accessibility tree unavailable"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return protocol.AccessibilityResult{}, protocol.Errorf(protocol.CodeNotFound, "%s", msg)
	}
	var res protocol.AccessibilityResult
	err := decodeJSON(raw, &res)
	return res, err
}

// FrontmostApp implements server.Driver.
func (d *Driver) FrontmostApp(ctx context.Context) (protocol.FrontmostApp, error) {
	raw := C.hc_frontmost_app_json()
	if raw == nil {
		return protocol.FrontmostApp{}, protocol.Errorf(protocol.CodeNotFound, "no frontmost application")
	}
	var app protocol.FrontmostApp
	err := decodeJSON(raw, &app)
	return app, err
}

// RunningApps implements server.Driver.
func (d *Driver) RunningApps(ctx context.Context) (protocol.RunningApps, error) {
	var apps protocol.RunningApps
	err := decodeJSON(C.hc_running_apps_json(), &apps)
	return apps, err
}

// decodeJSON decodes and frees a JSON string from the bridge.
func decodeJSON(raw *C.char, v any) error {
	if raw == nil {
		return protocol.Errorf(protocol.CodeInternalError, "the bridge returned nothing")
	}
	defer C.free(unsafe.Pointer(raw))
	if err := json.Unmarshal([]byte(C.GoString(raw)), v); err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "decode bridge JSON: %v", err)
	}
	return nil
}

// openResult turns an open function's code and message into an error.
func openResult(code C.int, cerr *C.char, what string) error {
	msg := ""
	if cerr != nil {
		msg = C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
	}
	switch code {
	case C.HC_OK:
		return nil
	case C.HC_NOT_FOUND:
		return protocol.Errorf(protocol.CodeNotFound, "no application named %q", what)
	}
	return protocol.Errorf(protocol.CodeInternalError, "open %s: %s", what, msg)
}

// OpenApp implements server.Driver: by bundle id or application name,
// brought to the front (an error says when macOS kept it behind).
func (d *Driver) OpenApp(ctx context.Context, name string) error {
	defer d.settle.Input() // the next capture waits for its window to draw
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr *C.char
	var pid C.int32_t
	if err := openResult(C.hc_open_app(cname, &pid, &cerr), cerr, name); err != nil {
		return err
	}
	return d.broughtForward(ctx, name, pid)
}

// OpenFile implements server.Driver.
func (d *Driver) OpenFile(ctx context.Context, path, app string) error {
	defer d.settle.Input() // the next capture waits for its window to draw
	cpath, capp := C.CString(path), C.CString(app)
	defer C.free(unsafe.Pointer(cpath))
	defer C.free(unsafe.Pointer(capp))
	var cerr *C.char
	what := path
	if app != "" {
		what = app
	}
	var pid C.int32_t
	if err := openResult(C.hc_open_file(cpath, capp, &pid, &cerr), cerr, what); err != nil {
		return err
	}
	return d.broughtForward(ctx, "the app that opened "+what, pid)
}

var _ server.AppResolver = (*Driver)(nil)

// ResolveApp implements server.AppResolver with the lookups OpenApp and
// OpenFile make: a bundle id or an application's name in the usual
// folders, or the application Launch Services opens a file with.
func (d *Driver) ResolveApp(ctx context.Context, name, path string) (protocol.ResolvedApp, error) {
	var raw *C.char
	if path != "" && name == "" {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		raw = C.hc_default_app_json(cpath)
	} else {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		raw = C.hc_resolve_app_json(cname)
	}
	var r protocol.ResolvedApp
	err := decodeJSON(raw, &r)
	return r, err
}

// OpenURL implements server.Driver.
func (d *Driver) OpenURL(ctx context.Context, url string) error {
	defer d.settle.Input() // the next capture waits for its window to draw
	curl := C.CString(url)
	defer C.free(unsafe.Pointer(curl))
	var cerr *C.char
	var pid C.int32_t
	if err := openResult(C.hc_open_url(curl, &pid, &cerr), cerr, url); err != nil {
		return err
	}
	return d.broughtForward(ctx, "the app that opened "+url, pid)
}

// ClipboardRead implements server.Driver.
func (d *Driver) ClipboardRead(ctx context.Context) (string, error) {
	raw := C.hc_clipboard_read()
	defer C.free(unsafe.Pointer(raw))
	return C.GoString(raw), nil
}

// ClipboardWrite implements server.Driver.
func (d *Driver) ClipboardWrite(ctx context.Context, text string) error {
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	if C.hc_clipboard_write(ctext) != 0 {
		return protocol.Errorf(protocol.CodeUnavailable, "the pasteboard refused the text")
	}
	return nil
}

// PowerOff implements server.Driver: with --poweroff, macOS shuts down
// cleanly with `sudo -n /sbin/shutdown -h now` (PowerOffCommand), which
// the template's sudoers rule allows without a password. Asking System
// Events to shut down would need the Automation permission, and the
// framework's RequestStop only shows a "shut down?" dialog.
func (d *Driver) PowerOff(ctx context.Context) error {
	if !d.cfg.PowerOff {
		return nil
	}
	out, err := exec.CommandContext(ctx, PowerOffCommand[0], PowerOffCommand[1:]...).CombinedOutput()
	if err != nil {
		return protocol.Errorf(protocol.CodeInternalError, "shut down (%s): %v: %s (is /etc/sudoers.d/hivecrew-guestagent installed? run install-agent.sh again)", strings.Join(PowerOffCommand, " "), err, out)
	}
	return nil
}
