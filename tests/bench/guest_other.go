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

// benchSandbox measures the Linux sandbox backend, which only Linux has.
func benchSandbox(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the sandbox benchmark needs a Linux host (bubblewrap)")
}

// benchHelper drives the helper with Linux sandboxes, which only Linux has.
func benchHelper(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the helper benchmark needs a Linux host (sandboxes)")
}

// benchThroughput drives the helper with Linux sandboxes, which only Linux has.
func benchThroughput(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the throughput benchmark needs a Linux host (sandboxes)")
}

// benchContext drives the helper with Linux sandboxes, which only Linux has.
func benchContext(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the context benchmark needs a Linux host (sandboxes)")
}

// benchCapacity drives the helper with Linux sandboxes, which only Linux has.
func benchCapacity(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the capacity benchmark needs a Linux host (sandboxes)")
}

// benchSoak drives the helper with Linux sandboxes, which only Linux has.
func benchSoak(context.Context, *slog.Logger) ([]Metric, error) {
	return nil, errors.New("the soak needs a Linux host (sandboxes)")
}
