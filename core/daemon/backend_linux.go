package daemon

import (
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
)

// platformBackend runs Linux desktops in bubblewrap sandboxes.
func platformBackend(cfg Config) (vm.Backend, error) {
	agent, err := guestAgentPath(cfg)
	if err != nil {
		return nil, err
	}
	// The helper's CPU is not for its machines to take.
	if err := sandbox.HelperFirst(); err != nil {
		cfg.Log.Warn("the helper is not weighed above its machines", "err", err)
	}
	return sandbox.New(sandbox.Config{AgentBinary: agent, DataDir: cfg.Paths.Home, Log: cfg.Log})
}
