//go:build !linux

package main

import (
	"context"
	"errors"
	"log/slog"
)

// benchGuest measures the Linux guest agent on Xvfb; other hosts have no
// sandbox desktops to measure.
func benchGuest(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the guest benchmark needs a Linux host (Xvfb, XTEST, bubblewrap)")
}
