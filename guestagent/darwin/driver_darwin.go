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
	"image"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
