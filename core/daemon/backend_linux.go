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
	return sandbox.New(sandbox.Config{AgentBinary: agent, DataDir: cfg.Paths.Home, Log: cfg.Log})
}
