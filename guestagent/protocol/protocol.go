// Package protocol defines the wire contract between the Hivecrew host and
// the guest agent (guestagent/protocol/PROTOCOL.md): JSON-RPC 2.0, one JSON object per
// line, over vsock (macOS guests) or a unix socket (Linux sandbox guests).
// It holds method names, parameter and result types, error codes and the
// protocol version. Standard library only: the host and the guest both
// import it, and the guest must stay small.
package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Version is the protocol version this build speaks.
//
// History (add a line for every change; add, never rename):
//
//	1  2026-11-21  first version: hello, health_check, screenshot,
//	               traverse_accessibility_tree, get_frontmost_app,
//	               list_running_apps, mouse_*, scroll, keyboard_*, open_*,
//	               run_shell (+ $/shellOutput), file tools, clipboard_*, wait,
//	               shutdown, $/heartbeat, $/cancelRequest.
//	2  2026-11-24  hello carries a challenge (and, on macOS guests, the
//	               boot key once per boot); the guest answers with
//	               HelloProof of its per-boot key. The host refuses a guest
//	               that cannot prove it.
const Version = 2

// MinVersion is the oldest guest protocol version the host accepts: 2, the
// first whose guests prove the boot key.
const MinVersion = 2

// KeyBytes is the size of a machine's per-boot key; ChallengeBytes the size
// of hello's challenge.
const (
	KeyBytes       = 32
	ChallengeBytes = 32
)

// helloContext binds a proof to its purpose and direction: the guest agent
// proving the boot key to the host, at hello, in protocol 2.
const helloContext = "hivecrew guest hello proof v2: guest to host\x00"

// HelloProof is the guest's answer to hello's challenge:
// HMAC-SHA256(key, helloContext || challenge).
func HelloProof(key, challenge []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(helloContext))
	m.Write(challenge)
	return m.Sum(nil)
}

// MaxLineBytes caps one message in either direction; a longer line is a
// protocol error that closes the connection.
const MaxLineBytes = 64 << 20

// HeartbeatInterval is how often the guest sends $/heartbeat; the host
// declares a guest unhealthy after MissedHeartbeats intervals of silence.
const (
	HeartbeatIntervalSeconds = 2
	MissedHeartbeats         = 3
)

// DefaultVsockPort is the vsock port the guest agent listens on in macOS guests.
const DefaultVsockPort = 7420

// Method names (host -> guest).
const (
	MethodHello             = "hello"
	MethodHealthCheck       = "health_check"
	MethodShutdown          = "shutdown"
	MethodScreenshot        = "screenshot"
	MethodAccessibilityTree = "traverse_accessibility_tree"
	MethodFrontmostApp      = "get_frontmost_app"
	MethodRunningApps       = "list_running_apps"
	MethodMouseMove         = "mouse_move"
	MethodMouseClick        = "mouse_click"
	MethodMouseDrag         = "mouse_drag"
	MethodMouseDown         = "mouse_down"
	MethodMouseUp           = "mouse_up"
	MethodCursorPosition    = "cursor_position"
	MethodScroll            = "scroll"
	MethodKeyboardType      = "keyboard_type"
	MethodKeyboardKey       = "keyboard_key"
	MethodHoldKey           = "hold_key"
	MethodOpenApp           = "open_app"
	MethodOpenFile          = "open_file"
	MethodOpenURL           = "open_url"
	MethodRunShell          = "run_shell"
	MethodReadFile          = "read_file"
	MethodWriteFile         = "write_file"
	MethodListDirectory     = "list_directory"
	MethodMoveFile          = "move_file"
	MethodClipboardRead     = "clipboard_read"
	MethodClipboardWrite    = "clipboard_write"
	MethodWait              = "wait"
	// MethodResolveApp (capability CapResolveApp) says what open_app or
	// open_file would run, without running it.
	MethodResolveApp = "resolve_app"
	// MethodReadDocument (capability CapDocuments) reads a file as the
	// model reads it: a document's text, paged; an image, fitted.
	MethodReadDocument = "read_document"
	// MethodReady (capability CapReady) answers once the desktop is
	// fully up: what the guest brings up after its first hello (a Linux
	// sandbox's AT-SPI) has started or failed to.
	MethodReady = "ready"
)

// Notification names.
const (
	// NotifyHeartbeat (guest -> host) carries HeartbeatParams every 2 s.
	NotifyHeartbeat = "$/heartbeat"
	// NotifyCancelRequest (host -> guest) carries CancelParams.
	NotifyCancelRequest = "$/cancelRequest"
	// NotifyShellOutput (guest -> host) carries ShellOutputParams while run_shell runs.
	NotifyShellOutput = "$/shellOutput"
)

// Capabilities a guest may announce in hello.
const (
	CapScreenshot    = "screenshot"
	CapInput         = "input"
	CapAccessibility = "accessibility"
	CapClipboard     = "clipboard"
	CapApps          = "apps"
	CapShell         = "shell"
	CapFiles         = "files"
	// CapInputV2 says the guest has the input of PROTOCOL.md's "Input,
	// version 2": modifiers held during mouse_click and scroll,
	// mouse_down, mouse_up, hold_key, cursor_position, keypad keys, the
	// modifier keys as keys, printscreen where the OS has the key, and
	// super as a modifier of its own. A host sends none of these to a
	// guest that does not announce it.
	CapInputV2 = "input.v2"
	// CapResolveApp says the guest answers resolve_app: what open_app
	// and open_file would run. A host that gets no such answer can only
	// judge an app by the name it is given.
	CapResolveApp = "apps.resolve"
	// CapReady says the guest answers ready. A host that keeps a VM
	// warm for a later task waits for it, so that the task finds the
	// desktop fully up; a task's own VM does not, and its first
	// screenshot comes sooner.
	CapReady = "ready"
	// CapDocuments says the guest answers read_document: the text of
	// PDF, Office, OpenDocument, RTF and HTML files, extracted in the
	// guest, and image files fitted for the model. A host that gets no
	// such answer reads files with read_file, as bytes.
	CapDocuments = "files.documents"
)

// Shared folder layout: the three folders of every VM's share.
const (
	InboxDir     = "inbox"
	OutboxDir    = "outbox"
	WorkspaceDir = "workspace"
)

// SharedEnv is the environment variable run_shell sets to the shared folder.
const SharedEnv = "HIVECREW_SHARED"

// FitSize returns the size a screenshot of w x h has when downscaled (aspect
// kept) to fit maxW x maxH, as screenshot's maxWidth and maxHeight ask; a
// zero bound is no bound, and an image is never enlarged.
func FitSize(w, h, maxW, maxH int) (int, int) {
	scale := 1.0
	if maxW > 0 && w > maxW {
		scale = float64(maxW) / float64(w)
	}
	if maxH > 0 && h > maxH && float64(maxH)/float64(h) < scale {
		scale = float64(maxH) / float64(h)
	}
	if scale == 1 {
		return w, h
	}
	return max(1, int(float64(w)*scale+0.5)), max(1, int(float64(h)*scale+0.5))
}
