package desktop

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
)

// SessionBusProblem: macOS always has a menu bar.
func SessionBusProblem() string { return "" }

func launchAgentPath(label string) string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "Library", "LaunchAgents", label+".plist")
}

func domain() string { return "gui/" + strconv.Itoa(os.Getuid()) }

// Autostart is the app's LaunchAgent that starts the menu-bar app at login.
type Autostart struct{ App string }

// Enabled reports whether the agent is installed.
func (a Autostart) Enabled() bool {
	_, err := os.Stat(launchAgentPath(AppLabel))
	return err == nil
}

// Set installs or removes the agent (it takes effect at the next login).
func (a Autostart) Set(on bool) error {
	path := launchAgentPath(AppLabel)
	if !on {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(LaunchAgentPlist(AppLabel, []string{a.App}, false, "")), 0o644)
}

// StartHelperService installs the helper's LaunchAgent (in the user's GUI
// session, so that it can show VM windows) and bootstraps it, replacing a
// previous registration. The agent names the guest agent the app found
// (Hivecrew.app/Contents/Resources, or next to the app in bin/).
func StartHelperService(helper string) (bool, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return false, err
	}
	logPath := filepath.Join(home, "Library", "Logs", "Hivecrew", "helper.log")
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	path := launchAgentPath(HelperLabel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	var agent string
	if in, err := config.CurrentInstall(); err == nil {
		agent, _ = config.FirstExecutable(in.GuestAgentCandidates())
	}
	plist := LaunchAgentPlist(HelperLabel, HelperServiceArgs(helper, agent), true, logPath)
	if err := os.WriteFile(path, []byte(plist), 0o644); err != nil {
		return false, err
	}
	run := func(args ...string) ([]byte, error) { return exec.Command("launchctl", args...).CombinedOutput() }
	if err := replaceLaunchAgent(run, domain(), HelperLabel, path, 10*time.Second, time.Sleep); err != nil {
		return false, err
	}
	return true, nil
}
