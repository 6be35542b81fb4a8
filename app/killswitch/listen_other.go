//go:build !linux && !darwin

package killswitch

import (
	"context"
	"errors"
)

// Listen is not available on this OS.
func Listen(ctx context.Context, display string, sc Shortcut, fire func()) error {
	return errors.New("kill switch: no global shortcut on this OS")
}
