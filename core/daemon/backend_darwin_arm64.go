package daemon

import (
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/vz"
)

// platformBackend runs macOS guests with the Virtualization framework.
func platformBackend(cfg Config) (vm.Backend, error) {
	return vz.New(vz.Options{Log: cfg.Log})
}
