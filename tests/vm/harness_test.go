// Package vm tests the Linux sandbox backend end to end: real bubblewrap
// sandboxes with real Xvfb desktops and guest agents, on real sockets.
package vm

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hivecrew/hivecrew/core/vm/sandbox"
)

// agentBin is the guest agent built for this test run.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vm-e2e")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755)
	agentBin = filepath.Join(dir, "hivecrew-guestagent")
	build := exec.Command("go", "build", "-o", agentBin, "./guestagent")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the guest agent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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
