//go:build !darwin

package main

import (
	"context"

	"github.com/hivecrew/hivecrew/core/daemon"
)

// serve runs the helper until ctx ends or it is asked to stop.
func serve(ctx context.Context, cfg daemon.Config) error { return daemon.Run(ctx, cfg) }
