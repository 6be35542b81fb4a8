//go:build !linux

package template

import (
	"context"
	"io"
	"syscall"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// buildRootFS needs Linux (debootstrap, overlayfs, bubblewrap).
func buildRootFS(ctx context.Context, s buildSpec) (result, error) {
	return result{}, errdefs.Unsupportedf("Linux templates are built on Linux")
}

// sealRootFS needs Linux (overlayfs).
func sealRootFS(ctx context.Context, lower, upper, dst string, log io.Writer, track *tracker) error {
	return errdefs.Unsupportedf("sandbox VMs are sealed on Linux")
}

func unmountLeftovers(dir string) {}

// procAttr puts a build step in its own process group (killed as one).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
