// Package errdefs defines the few error classes Hivecrew uses everywhere:
// not found, conflict, invalid, unavailable, unsupported and too large. Layers
// wrap them with context (fmt.Errorf("...: %w", err)); the edges (HTTP status
// codes, JSON-RPC codes) map them once, with errors.Is, and back.
package errdefs

import (
	"errors"
	"fmt"
)

// The error classes. Test with errors.Is; create with the constructors below so
// the message carries the detail and the class survives wrapping.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrInvalid     = errors.New("invalid")
	ErrUnavailable = errors.New("unavailable")
	ErrUnsupported = errors.New("unsupported")
	ErrTooLarge    = errors.New("too large")
)

// classed is an error whose text is its detail alone and whose class is found
// by errors.Is, so messages read "task 42 not found" rather than
// "not found: task 42 not found".
type classed struct {
	class error
	msg   string
}

func (e *classed) Error() string { return e.msg }

func (e *classed) Is(target error) bool { return target == e.class }

func newf(class error, format string, args ...any) error {
	return &classed{class: class, msg: fmt.Sprintf(format, args...)}
}

// NotFoundf returns an error of class ErrNotFound with the formatted message.
func NotFoundf(format string, args ...any) error { return newf(ErrNotFound, format, args...) }

// Conflictf returns an error of class ErrConflict (wrong state, duplicate).
func Conflictf(format string, args ...any) error { return newf(ErrConflict, format, args...) }

// Invalidf returns an error of class ErrInvalid (bad input).
func Invalidf(format string, args ...any) error { return newf(ErrInvalid, format, args...) }

// Unavailablef returns an error of class ErrUnavailable (try again later).
func Unavailablef(format string, args ...any) error { return newf(ErrUnavailable, format, args...) }

// Unsupportedf returns an error of class ErrUnsupported (not on this platform or backend).
func Unsupportedf(format string, args ...any) error { return newf(ErrUnsupported, format, args...) }

// TooLargef returns an error of class ErrTooLarge (a size cap was exceeded).
func TooLargef(format string, args ...any) error { return newf(ErrTooLarge, format, args...) }

// Class returns the class of err (one of the Err* values), or nil when err
// belongs to none of them.
func Class(err error) error {
	for _, c := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrUnavailable, ErrUnsupported, ErrTooLarge} {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// New returns an error with message msg and class class (one of the Err*
// values), as decoded from the wire.
func New(class error, msg string) error { return &classed{class: class, msg: msg} }
