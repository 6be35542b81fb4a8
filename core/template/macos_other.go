//go:build !(darwin && arm64)

package template

import (
	"context"
	"io"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/macsetup"
)

// buildMacOS needs Apple's Virtualization framework on Apple silicon.
func buildMacOS(ctx context.Context, s buildSpec) (result, error) {
	return result{}, errdefs.Unsupportedf("macOS templates are built on a Mac with Apple silicon")
}

// sealBundle needs APFS clones.
func sealBundle(ctx context.Context, vmDir, dst string, log io.Writer, track *tracker) error {
	return errdefs.Unsupportedf("macOS VMs are sealed on a Mac")
}

// screenReader needs Apple's Vision framework.
func screenReader() (macsetup.Reader, error) {
	return nil, errdefs.Unsupportedf("the unattended setup reads the VM's screens with Apple's Vision framework, on a Mac")
}
