package server

import (
	"context"
	"image"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Driver is what a guest OS provides: the screen, input, accessibility, apps
// and clipboard. Coordinates are logical points of the guest screen. Key names
// and modifiers arrive normalised (see NormalizeKey, NormalizeModifier).
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
	// MouseClick clicks count times (1-3) with button.
	MouseClick(ctx context.Context, x, y float64, button string, count int) error
	MouseDrag(ctx context.Context, p protocol.DragParams) error
	Scroll(ctx context.Context, p protocol.ScrollParams) error
	TypeText(ctx context.Context, text string) error
	PressKey(ctx context.Context, key string, modifiers []string) error

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
