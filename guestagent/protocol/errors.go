package protocol

import "fmt"

// Error codes. The standard JSON-RPC ones, then the application range.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeCancelled answers a request cancelled by $/cancelRequest (the LSP code).
	CodeCancelled = -32800

	// CodeNotFound: a file, app or element that does not exist.
	CodeNotFound = -32001
	// CodePermissionDenied: a path outside the shared folder, a symlink
	// escape, or a missing OS permission (Screen Recording, Accessibility).
	CodePermissionDenied = -32002
	// CodeUnavailable: the display, accessibility bus or clipboard is not
	// reachable right now.
	CodeUnavailable = -32003
	// CodeUnsupported: not possible on this guest OS.
	CodeUnsupported = -32004
	// CodeTooLarge: a size cap was exceeded.
	CodeTooLarge = -32005
	// CodeTimeout: the operation's own deadline passed (a shell command's timeout).
	CodeTimeout = -32006
	// CodeConflict: the target exists or is in the wrong state.
	CodeConflict = -32007
	// CodeVersionMismatch: hello with a protocol version the guest cannot speak.
	CodeVersionMismatch = -32008
)

// Error is an error with a protocol code, as handlers return it and as the
// host receives it.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
