package guard

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/plisttest"
)

// readPlist parses a plist file into its top-level dict.
func readPlist(t *testing.T, path string) map[string]any {
	t.Helper()
	p, err := plisttest.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGuestAgentLaunchAgent: the LaunchAgent starts the agent at load, keeps
// it alive, only in GUI sessions, on the protocol's vsock port.
func TestGuestAgentLaunchAgent(t *testing.T) {
	p := readPlist(t, "../../Resources/com.hivecrew.guestagent.plist")
	if p["Label"] != "com.hivecrew.guestagent" || p["RunAtLoad"] != true || p["KeepAlive"] != true || p["LimitLoadToSessionType"] != "Aqua" {
		t.Fatalf("launch agent keys: %v", p)
	}
	var args []string
	for _, a := range p["ProgramArguments"].([]any) {
		args = append(args, a.(string))
	}
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) || args[i+1] != fmt.Sprintf("vsock:%d", protocol.DefaultVsockPort) || !slices.Contains(args, "--shared") {
		t.Fatalf("ProgramArguments %q do not listen on vsock:%d with a shared folder", args, protocol.DefaultVsockPort)
	}
}

// TestEntitlements: the helper may use the Virtualization framework.
func TestEntitlements(t *testing.T) {
	p := readPlist(t, "../../entitlements.plist")
	if p["com.apple.security.virtualization"] != true {
		t.Fatalf("entitlements: %v", p)
	}
}
