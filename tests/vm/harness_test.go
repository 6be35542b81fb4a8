// Package vm tests the Linux sandbox backend end to end: real bubblewrap
// sandboxes with real Xvfb desktops and guest agents, on real sockets.
package vm

import (
	"io"
	"log/slog"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm/sandbox"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

// agentBin is the guest agent built for this test run.
var agentBin string

func TestMain(m *testing.M) {
	testbin.MainWithAgent(m, &agentBin)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newBackend returns a sandbox backend whose data directory is dataDir.
func newBackend(t *testing.T, dataDir string) *sandbox.Backend {
	t.Helper()
	b, err := sandbox.New(sandbox.Config{AgentBinary: agentBin, DataDir: dataDir, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
