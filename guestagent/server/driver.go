package server

import (
	"context"
	"image"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// Speculator is a Driver whose Capture first waits for the screen to
// settle after input (settle.Settler.Wait) and that can capture without
// the wait: the server then captures and encodes once the screen has been
// quiet for half the settle time, while the wait goes on, and keeps
// that screenshot if nothing was drawn before the wait ended (most steps:
// the encoding no longer follows the wait but overlaps it).
type Speculator interface {
	// Settler is the state Capture waits on.
	Settler() *settle.Settler
	// CaptureNow is Capture without the wait.
	CaptureNow(ctx context.Context) (image.Image, error)
}

// Warmer is a Driver that brings part of its desktop up after the guest
// first answers (Linux: AT-SPI, see linux.Session.Warm). The server
// starts it as it answers hello (until Close), and every request that
// starts or drives programs or reads the accessibility tree (all but
// those in observes) waits for it first, so that what they start is
// accessible; its error is not theirs (accessibility is then what is
// missing, and hello and health say so).
type Warmer interface {
	Warm(ctx context.Context) error
}

// Driver is what a guest OS provides: the screen, input, accessibility, apps
// and clipboard. Coordinates are logical points of the guest screen. Key names
// and modifiers arrive normalised (see NormalizeKey, NormalizeModifiers),
// points and buttons checked.
// Errors of type *protocol.Error keep their code on the wire.
type Driver interface {
	// Describe returns the OS, display, capabilities and permissions.
	Describe(ctx context.Context) (Description, error)
	// Screen returns the display size; it is called before every input
	// action, so it must be cheap.
	Screen() protocol.Screen
	// Capture returns the whole screen at its native pixel size. A
	// *frame.Frame with a Release function is released once encoded.
	Capture(ctx context.Context) (image.Image, error)
	AccessibilityTree(ctx context.Context, p protocol.AccessibilityParams) (protocol.AccessibilityResult, error)
	FrontmostApp(ctx context.Context) (protocol.FrontmostApp, error)
	RunningApps(ctx context.Context) (protocol.RunningApps, error)

	MouseMove(ctx context.Context, x, y float64) error
	// MouseClick clicks count times (1-3) with button, with modifiers
	// held during the clicks; it releases them before it returns,
	// whatever happened.
	MouseClick(ctx context.Context, x, y float64, button string, count int, modifiers []string) error
	MouseDrag(ctx context.Context, p protocol.DragParams) error
	// MouseButton presses (down) or releases button where the pointer
	// is. A press followed by MouseMove calls and a release is a drag:
	// the moves are made with the button held.
	MouseButton(ctx context.Context, button string, down bool) error
	// CursorPosition returns where the pointer is, in logical points.
	CursorPosition(ctx context.Context) (protocol.CursorPosition, error)
	// Scroll scrolls with p.Modifiers held during the scroll, and
	// releases them before it returns, whatever happened.
	Scroll(ctx context.Context, p protocol.ScrollParams) error
	TypeText(ctx context.Context, text string) error
	PressKey(ctx context.Context, key string, modifiers []string) error
	// KeyDown presses modifiers, then key, and leaves them down; release
	// lets go of exactly what it pressed (key, then modifiers in reverse)
	// and must be called once, with a context that is still live. When
	// KeyDown fails, nothing is left down.
	KeyDown(ctx context.Context, key string, modifiers []string) (release func(context.Context) error, err error)

	OpenApp(ctx context.Context, name string) error
	// OpenFile opens an absolute path, with app when not empty.
	OpenFile(ctx context.Context, path, app string) error
	OpenURL(ctx context.Context, url string) error

	ClipboardRead(ctx context.Context) (string, error)
	ClipboardWrite(ctx context.Context, text string) error

	// PowerOff shuts the guest down; it is called after the shutdown
	// request has been answered.
	PowerOff(ctx context.Context) error
}

// Description is what a driver knows of its guest.
type Description struct {
	OS           string // "macos" or "linux"
	OSVersion    string
	Screen       protocol.Screen
	Capabilities []string
	Permissions  protocol.Permissions
	// Problems lists what keeps the guest from working fully (a missing
	// permission, no accessibility bus); empty when healthy.
	Problems []string
}
