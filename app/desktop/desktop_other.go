//go:build !linux && !darwin

package desktop

import "errors"

var errUnsupported = errors.New("the menu-bar app runs on macOS and Linux")

// Open is not available on this OS.
func Open(link string) error { return errUnsupported }

// Notify is not available on this OS.
func Notify(task, title, body string) error { return errUnsupported }

// SessionBusProblem: no menu bar here.
func SessionBusProblem() string { return "this OS has no supported menu bar" }

// Autostart is not available on this OS.
type Autostart struct{ App string }

// Enabled reports false.
func (Autostart) Enabled() bool { return false }

// Set fails.
func (Autostart) Set(bool) error { return errUnsupported }

// StartHelperService reports false: start the helper directly.
func StartHelperService(string) (bool, error) { return false, nil }
