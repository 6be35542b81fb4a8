package protocol

import "time"

// HelloParams opens a session. Challenge is ChallengeBytes of fresh
// randomness the guest answers with HelloProof. EnrollKey hands the guest
// agent its boot key where the host has no other channel to it (macOS
// guests): only in the first hello of a boot, and a guest agent that holds
// a key already refuses another.
type HelloParams struct {
	ProtocolVersion int    `json:"protocolVersion"`
	Challenge       []byte `json:"challenge,omitempty"`
	EnrollKey       []byte `json:"enrollKey,omitempty"`
}

// Screen is the guest display: Width and Height in logical points, Scale
// points to pixels (2 on a Retina display, 1 on X11).
type Screen struct {
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Scale  float64 `json:"scale"`
}

// Permissions are the OS permissions the agent needs (macOS TCC; always
// granted on Linux).
type Permissions struct {
	ScreenRecording bool `json:"screenRecording"`
	Accessibility   bool `json:"accessibility"`
	// SharedFolder: the agent can read the shared folder (macOS asks
	// before a process reads a volume). Agents before it leave it out.
	SharedFolder bool `json:"sharedFolder"`
}

// HelloResult describes the guest.
type HelloResult struct {
	ProtocolVersion int         `json:"protocolVersion"`
	AgentVersion    string      `json:"agentVersion"`
	OS              string      `json:"os"` // "macos" or "linux"
	OSVersion       string      `json:"osVersion"`
	Screen          Screen      `json:"screen"`
	SharedPath      string      `json:"sharedPath"`
	Capabilities    []string    `json:"capabilities"`
	Permissions     Permissions `json:"permissions"`
	// Proof is HelloProof(boot key, the hello's challenge).
	Proof []byte `json:"proof,omitempty"`
}

// HealthResult is the answer to health_check.
type HealthResult struct {
	OK            bool        `json:"ok"`
	Permissions   Permissions `json:"permissions"`
	SharedMounted bool        `json:"sharedMounted"`
	UptimeSeconds float64     `json:"uptimeSeconds"`
	// Problems lists what is wrong when OK is false.
	Problems []string `json:"problems,omitempty"`
}

// HeartbeatParams is sent with every $/heartbeat.
type HeartbeatParams struct {
	UptimeSeconds float64 `json:"uptimeSeconds"`
}

// CancelParams names the request $/cancelRequest cancels. ID is the request's
// JSON id, a number or a string.
type CancelParams struct {
	ID any `json:"id"`
}

// Image formats.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
)

// ScreenshotParams asks for the screen, downscaled (aspect kept) to fit
// MaxWidth x MaxHeight when set. Quality is the JPEG quality, 1-100.
type ScreenshotParams struct {
	Format    string `json:"format,omitempty"`
	MaxWidth  int    `json:"maxWidth,omitempty"`
	MaxHeight int    `json:"maxHeight,omitempty"`
	Quality   int    `json:"quality,omitempty"`
}

// ScreenshotResult is an encoded image. Width and Height are its pixels; Data
// is base64 on the wire.
type ScreenshotResult struct {
	Format string `json:"format"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Data   []byte `json:"data"`
}

// AccessibilityParams filters the tree: App (name or bundle id), MaxDepth
// (0 = the guest's default), OnlyVisible.
type AccessibilityParams struct {
	App         string `json:"app,omitempty"`
	MaxDepth    int    `json:"maxDepth,omitempty"`
	OnlyVisible bool   `json:"onlyVisible,omitempty"`
}

// Rect is a frame in logical points of the guest screen.
type Rect struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Node is one accessibility element.
type Node struct {
	ID       string  `json:"id"`
	Role     string  `json:"role"`
	Name     string  `json:"name"`
	Value    *string `json:"value,omitempty"`
	Frame    Rect    `json:"frame"`
	Children []Node  `json:"children,omitempty"`
}

// AccessibilityResult is the tree: one node per application at the top.
type AccessibilityResult struct {
	Nodes []Node `json:"nodes"`
}

// App is a running application.
type App struct {
	Name     string `json:"name"`
	BundleID string `json:"bundleId,omitempty"`
	PID      int    `json:"pid"`
}

// FrontmostApp is the application with keyboard focus.
type FrontmostApp struct {
	Name        string `json:"name"`
	BundleID    string `json:"bundleId,omitempty"`
	PID         int    `json:"pid"`
	WindowTitle string `json:"windowTitle,omitempty"`
}

// RunningApps lists the running GUI applications.
type RunningApps struct {
	Apps []App `json:"apps"`
}

// PointParams is a position in logical points.
type PointParams struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Mouse buttons and click types.
const (
	ButtonLeft   = "left"
	ButtonRight  = "right"
	ButtonMiddle = "middle"

	ClickSingle = "single"
	ClickDouble = "double"
	ClickTriple = "triple"
)

// ClickParams clicks at a point; Button defaults to left, ClickType to
// single. Modifiers (input.v2) are held during the click and released
// after it.
type ClickParams struct {
	X         float64  `json:"x"`
	Y         float64  `json:"y"`
	Button    string   `json:"button,omitempty"`
	ClickType string   `json:"clickType,omitempty"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// ButtonParams presses (mouse_down) or releases (mouse_up) a button at the
// pointer, moving it to X, Y first when both are given (input.v2). Button
// defaults to left.
type ButtonParams struct {
	Button string   `json:"button,omitempty"`
	X      *float64 `json:"x,omitempty"`
	Y      *float64 `json:"y,omitempty"`
}

// CursorPosition is where the pointer is, in logical points.
type CursorPosition struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// DragParams drags with the left button held.
type DragParams struct {
	FromX float64 `json:"fromX"`
	FromY float64 `json:"fromY"`
	ToX   float64 `json:"toX"`
	ToY   float64 `json:"toY"`
}

// ScrollParams scrolls at a point; positive DeltaY scrolls down, positive
// DeltaX right, in lines (notches). Modifiers (input.v2) are held during
// the scroll and released after it.
type ScrollParams struct {
	X         float64  `json:"x"`
	Y         float64  `json:"y"`
	DeltaX    float64  `json:"deltaX"`
	DeltaY    float64  `json:"deltaY"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// TypeParams types text (any Unicode).
type TypeParams struct {
	Text string `json:"text"`
}

// Modifiers. ModSuper (input.v2) is the Super (Windows) key on Linux and
// the same as ModCommand on macOS; ModCommand is Control on Linux.
const (
	ModCommand = "command"
	ModControl = "control"
	ModOption  = "option"
	ModShift   = "shift"
	ModFn      = "fn"
	ModSuper   = "super"
)

// KeyParams presses one key with modifiers held.
type KeyParams struct {
	Key       string   `json:"key"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// HoldKeyParams holds a key, with Modifiers held around it, for Seconds
// (more than 0, at most MaxHoldSeconds), then releases it (input.v2).
type HoldKeyParams struct {
	Key       string   `json:"key"`
	Modifiers []string `json:"modifiers,omitempty"`
	Seconds   float64  `json:"seconds"`
}

// MaxHoldSeconds bounds hold_key's seconds.
const MaxHoldSeconds = 30

// OpenAppParams opens an app by name or bundle id (desktop-file id on Linux).
type OpenAppParams struct {
	Name string `json:"name"`
}

// OpenFileParams opens a file, with App when given.
type OpenFileParams struct {
	Path string `json:"path"`
	App  string `json:"app,omitempty"`
}

// ResolveAppParams asks what open_app or open_file would run, without
// running it (capability CapResolveApp): App alone is open_app's name;
// Path, with App when open_file names one, is open_file's.
type ResolveAppParams struct {
	App  string `json:"app,omitempty"`
	Path string `json:"path,omitempty"`
}

// ResolvedApp is what an open_app or open_file call would start: the
// desktop entry (Linux) or bundle (macOS) the name or the file's default
// application resolves to, and the program it runs. It is data the host
// judges; the guest decides nothing with it. Found is false when the call
// would find nothing to open (open_app's "no application named", a file
// type with no default application).
type ResolvedApp struct {
	Found bool `json:"found"`
	// Kind is how the name was found: "desktop-entry", "program" (a name
	// on PATH) or "bundle".
	Kind string `json:"kind,omitempty"`
	// ID is the desktop-file id or the bundle id; Name the entry's or
	// bundle's name; File the .desktop file or the .app bundle.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	File string `json:"file,omitempty"`
	// Executable is the real path (symbolic links resolved) of the
	// program that runs; Args the arguments its entry gives it, file
	// field codes dropped.
	Executable string   `json:"executable,omitempty"`
	Args       []string `json:"args,omitempty"`
	// Terminal says the entry runs inside a terminal (Terminal=true);
	// Categories are the entry's (TerminalEmulator, ...).
	Terminal   bool     `json:"terminal,omitempty"`
	Categories []string `json:"categories,omitempty"`
	// MIME is the type a file's default application was chosen for.
	MIME string `json:"mime,omitempty"`
	// Target describes open_file's file.
	Target *FileFacts `json:"target,omitempty"`
}

// FileFacts are what makes a file a program: its executable bits, its
// first line when that is a #! line, and whether it is a folder (a macOS
// .app bundle is one).
type FileFacts struct {
	Executable bool   `json:"executable,omitempty"`
	Shebang    string `json:"shebang,omitempty"`
	Dir        bool   `json:"dir,omitempty"`
}

// Bounds of a ResolvedApp: guests cut what they send to these, and the
// host refuses an answer beyond them.
const (
	MaxResolvedString = 4096 // a path, an id, a name, an argument
	MaxResolvedList   = 64   // Args, Categories
	MaxShebang        = 256
)

// OpenURLParams opens a URL in the default browser.
type OpenURLParams struct {
	URL string `json:"url"`
}

// ShellParams runs a command with /bin/sh -c. Env adds variables to the
// command's environment (the host's provisioned ones): names match
// [A-Za-z_][A-Za-z0-9_]*, at most MaxShellEnv of them, MaxShellEnvBytes in
// all, no NUL byte.
type ShellParams struct {
	Command        string            `json:"command"`
	TimeoutSeconds float64           `json:"timeoutSeconds,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
}

// Bounds of run_shell's env.
const (
	MaxShellEnv      = 128
	MaxShellEnvBytes = 256 << 10
)

// MaxShellTimeoutSeconds bounds run_shell's timeoutSeconds: a longer one
// runs with this limit.
const MaxShellTimeoutSeconds = 3600

// ValidEnvName reports whether name may name an environment variable:
// [A-Za-z_][A-Za-z0-9_]*, at most 128 bytes.
func ValidEnvName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i, c := range name {
		if c != '_' && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && (i == 0 || !(c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// ShellResult is a finished command. Truncated says the output cap cut
// stdout or stderr; TimedOut says the command was killed at its timeout (its
// ExitCode is then -1). A command killed by a signal exits 128+signal.
type ShellResult struct {
	ExitCode  int    `json:"exitCode"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
	TimedOut  bool   `json:"timedOut,omitempty"`
}

// Shell output streams.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ShellOutputParams is a chunk of a running command's output. RequestID is
// the run_shell request's id.
type ShellOutputParams struct {
	RequestID any    `json:"requestId"`
	Stream    string `json:"stream"`
	Data      string `json:"data"`
}

// ReadFileParams reads a file, at most MaxBytes of it (0 = the guest's cap).
type ReadFileParams struct {
	Path     string `json:"path"`
	MaxBytes int64  `json:"maxBytes,omitempty"`
}

// ReadFileResult carries text files in Contents and anything else in Base64;
// Size is the file's full size; Truncated says MaxBytes cut it.
type ReadFileResult struct {
	Contents  *string `json:"contents,omitempty"`
	Base64    []byte  `json:"base64,omitempty"`
	Size      int64   `json:"size"`
	Truncated bool    `json:"truncated,omitempty"`
}

// WriteFileParams writes Contents (text) or Base64 (bytes), creating parent
// folders.
type WriteFileParams struct {
	Path     string  `json:"path"`
	Contents *string `json:"contents,omitempty"`
	Base64   []byte  `json:"base64,omitempty"`
}

// WriteFileResult reports the bytes written.
type WriteFileResult struct {
	Size int64 `json:"size"`
}

// ListDirectoryParams lists one folder.
type ListDirectoryParams struct {
	Path string `json:"path"`
}

// DirEntry is one entry of a folder.
type DirEntry struct {
	Name     string    `json:"name"`
	IsDir    bool      `json:"isDir"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// ListDirectoryResult lists a folder, by name.
type ListDirectoryResult struct {
	Entries []DirEntry `json:"entries"`
}

// MoveFileParams moves or renames a file or folder.
type MoveFileParams struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// ClipboardText is the clipboard's text.
type ClipboardText struct {
	Text string `json:"text"`
}

// WaitParams waits (cancellable).
type WaitParams struct {
	Seconds float64 `json:"seconds"`
}

// Empty is the result of methods that return nothing.
type Empty struct{}

// ReadDocumentParams reads a file as the model reads it (capability
// CapDocuments). Page (from 1; 0 is 1) is the page, sheet or slide to
// start at; Offset a byte offset into that page's text, as a previous
// answer's NextOffset gives it. MaxChars bounds the text (0, or more than
// MaxDocumentText: MaxDocumentText); MaxWidth and MaxHeight the image
// (0: MaxDocumentImageSide). NoImage asks for an image file's format and
// size only (a model that takes no images).
type ReadDocumentParams struct {
	Path      string `json:"path"`
	Page      int    `json:"page,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	MaxChars  int    `json:"maxChars,omitempty"`
	MaxWidth  int    `json:"maxWidth,omitempty"`
	MaxHeight int    `json:"maxHeight,omitempty"`
	NoImage   bool   `json:"noImage,omitempty"`
}

// Kinds of read_document answers.
const (
	DocumentKindText  = "text"
	DocumentKindImage = "image"
)

// DocumentResult is read_document's answer. Kind is DocumentKindText
// or DocumentKindImage; Format the file's ("pdf", "docx", "xlsx", "pptx", "odt",
// "ods", "odp", "rtf", "html", "text", "png", "jpeg", "gif", "webp",
// "heic", ...); Size its bytes.
//
// Text starts at page Page (of Pages: pages, sheets or slides; 1 for a
// document without pages), Offset bytes into it; each page that starts
// in it is headed by a line "--- Page 2 of 9 ---" ("Sheet 2 of 3:
// NAME", "Slide 2 of 9") when the document has more than one. Truncated
// says more follows: the next read starts at NextPage, NextOffset.
//
// Image is the image file decoded and re-encoded by the guest, fitted
// within the request's bounds: PNG or JPEG. Width and Height (without
// Image: with NoImage) are the file's own pixels.
type DocumentResult struct {
	Kind       string         `json:"kind"`
	Format     string         `json:"format"`
	Size       int64          `json:"size"`
	Text       string         `json:"text,omitempty"`
	Pages      int            `json:"pages,omitempty"`
	Page       int            `json:"page,omitempty"`
	Offset     int            `json:"offset,omitempty"`
	Truncated  bool           `json:"truncated,omitempty"`
	NextPage   int            `json:"nextPage,omitempty"`
	NextOffset int            `json:"nextOffset,omitempty"`
	Width      int            `json:"width,omitempty"`
	Height     int            `json:"height,omitempty"`
	Image      *DocumentImage `json:"image,omitempty"`
}

// DocumentImage is an image for the model: Format FormatPNG or
// FormatJPEG, of Width x Height pixels; Data is base64 on the wire.
type DocumentImage struct {
	Format string `json:"format"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Data   []byte `json:"data"`
}

// Bounds of read_document: guests keep to them and the host refuses an
// answer beyond them.
const (
	// MaxDocumentText bounds an answer's text, in bytes (the page
	// headings included).
	MaxDocumentText = 64 << 10
	// MaxDocumentImageSide bounds each side of an answer's image, and
	// MaxDocumentImageBytes its encoded size.
	MaxDocumentImageSide  = 2048
	MaxDocumentImageBytes = 4 << 20
	// MaxDocumentPages bounds Pages and the page numbers.
	MaxDocumentPages = 1_000_000
)
