//go:build !linux && !(darwin && arm64)

package daemon

import (
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// platformBackend: this platform has no VM backend.
func platformBackend(cfg Config) (vm.Backend, error) {
	return nil, errdefs.Unsupportedf("Hivecrew runs VMs on macOS (Apple silicon) and Linux only")
}
