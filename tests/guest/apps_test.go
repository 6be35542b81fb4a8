package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestOpenAppsAndFiles: apps open by desktop-file id and by program name, a
// file from the share opens in the app asked for, and unknown apps are a
// clear error. open_app and open_file answer once the window is there, so
// the model's next screenshot shows it: no polling after the answer.
func TestOpenAppsAndFiles(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)

	health := must[protocol.HealthResult](a, protocol.MethodHealthCheck, nil)
	if !health.SharedMounted || !health.Permissions.Accessibility || health.UptimeSeconds <= 0 {
		t.Errorf("health = %+v", health)
	}

	running := func(class string) bool {
		apps, err := call[protocol.RunningApps](a, protocol.MethodRunningApps, nil)
		if err != nil {
			return false
		}
		for _, app := range apps.Apps {
			if strings.EqualFold(app.Name, class) {
				return true
			}
		}
		return false
	}
	must[protocol.Empty](a, protocol.MethodOpenApp, protocol.OpenAppParams{Name: "debian-xterm"})
	if !running("XTerm") {
		t.Fatal("open_app answered before xterm's window was managed")
	}

	if err := os.WriteFile(filepath.Join(a.shared, "inbox", "note.txt"), []byte("a note for the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must[protocol.Empty](a, protocol.MethodOpenFile, protocol.OpenFileParams{Path: "inbox/note.txt", App: "Mousepad"})
	if !running("Mousepad") {
		t.Fatal("open_file answered before Mousepad's window was managed")
	}
	env.WaitFor(15*time.Second, "Mousepad showing note.txt", func() bool {
		front, err := call[protocol.FrontmostApp](a, protocol.MethodFrontmostApp, nil)
		return err == nil && strings.Contains(front.WindowTitle, "note.txt")
	})

	if _, err := call[protocol.Empty](a, protocol.MethodOpenApp, protocol.OpenAppParams{Name: "no-such-app-anywhere"}); codeOf(err) != protocol.CodeNotFound {
		t.Errorf("unknown app = %v, want not found", err)
	}
	if _, err := call[protocol.Empty](a, protocol.MethodOpenApp, protocol.OpenAppParams{Name: "false"}); err == nil || !strings.Contains(err.Error(), "exited with status 1") {
		t.Errorf("a program that fails at once = %v, want its exit status", err)
	}
	if _, err := call[protocol.Empty](a, protocol.MethodOpenFile, protocol.OpenFileParams{Path: "/etc/passwd"}); codeOf(err) != protocol.CodePermissionDenied {
		t.Errorf("open_file outside the share = %v, want permission denied", err)
	}
	if _, err := call[protocol.Empty](a, protocol.MethodOpenFile, protocol.OpenFileParams{Path: "inbox/missing.txt"}); codeOf(err) != protocol.CodeNotFound {
		t.Errorf("open_file of a missing file = %v, want not found", err)
	}
}

// TestShutdownEndsTheAgent: shutdown is answered, then the agent exits (in a
// sandbox its exit ends the guest; nothing is powered off without --poweroff).
func TestShutdownEndsTheAgent(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	a := startAgent(t, env)
	exited := make(chan error, 1)
	go func() { _, err := a.cmd.Process.Wait(); exited <- err }()
	must[protocol.Empty](a, protocol.MethodShutdown, nil)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the agent still runs 5 s after shutdown")
	}
}
