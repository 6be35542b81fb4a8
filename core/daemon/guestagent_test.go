package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/config"
)

// TestGuestAgentInAppBundle answers issue 16.1: the helper of an installed
// Hivecrew.app (in Contents/Helpers/HivecrewHelper.app) finds the guest
// agent that scripts/bundle-app puts in Contents/Resources, so that
// `templates setup` works without --guest-agent; a helper with no agent
// anywhere says where it looked.
func TestGuestAgentInAppBundle(t *testing.T) {
	app := filepath.Join(t.TempDir(), "Hivecrew.app")
	helper := config.HelperInApp(app)
	agent := filepath.Join(app, "Contents", "Resources", config.GuestAgentBinary)
	for _, f := range []string{helper, agent} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := config.LocateInstall(helper)
	got, err := findGuestAgent(in)
	if err != nil || got != agent {
		t.Fatalf("findGuestAgent = %q, %v; want %q", got, err, agent)
	}
	// A configured agent wins over the bundle's.
	if got, err := guestAgentPath(Config{GuestAgent: "/opt/agent"}); err != nil || got != "/opt/agent" {
		t.Fatalf("configured agent: %q %v", got, err)
	}
	os.Remove(agent)
	_, err = findGuestAgent(in)
	if err == nil || !strings.Contains(err.Error(), agent) || !strings.Contains(err.Error(), "--guest-agent") {
		t.Fatalf("no agent: %v", err)
	}
}
