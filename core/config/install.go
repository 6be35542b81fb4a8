package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names of Hivecrew's executables and of the helper's own bundle inside
// Hivecrew.app.
const (
	CLIBinary        = "hivecrew"
	HelperBinary     = "hivecrew-helper"
	GuestAgentBinary = "hivecrew-guestagent"
	// HelperBundle is the helper's app bundle (bundle id
	// com.hivecrew.helper), in Hivecrew.app/Contents/Helpers, so that
	// LaunchServices never sees two processes of com.hivecrew.app.
	HelperBundle = "HivecrewHelper.app"
)

// Install is where a running Hivecrew executable sits: a plain folder (bin/
// of `make build`, /usr/local/bin) or inside Hivecrew.app, whose layout is
// (scripts/bundle-app):
//
//	Hivecrew.app/Contents/MacOS/hivecrew
//	Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper
//	Hivecrew.app/Contents/Resources/hivecrew-guestagent
type Install struct {
	// Exe is the executable, symbolic links resolved.
	Exe string
	// App is the outermost enclosing .app bundle ("" outside one).
	App string
}

// LocateInstall describes where exe sits. exe should be absolute with its
// links resolved (see CurrentInstall).
func LocateInstall(exe string) Install {
	in := Install{Exe: filepath.Clean(exe)}
	// The outermost "X.app/Contents" on the path is the app.
	parts := strings.Split(in.Exe, string(filepath.Separator))
	for i := 0; i+1 < len(parts); i++ {
		if strings.HasSuffix(parts[i], ".app") && len(parts[i]) > len(".app") && parts[i+1] == "Contents" {
			in.App = strings.Join(parts[:i+1], string(filepath.Separator))
			if in.App == "" {
				in.App = string(filepath.Separator)
			}
			break
		}
	}
	return in
}

// CurrentInstall locates the running executable.
func CurrentInstall() (Install, error) {
	exe, err := os.Executable()
	if err != nil {
		return Install{}, fmt.Errorf("find this executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return LocateInstall(exe), nil
}

// GuestAgentCandidates lists where the guest agent may be, in order: next
// to the executable, then in the app's Contents/Resources.
func (in Install) GuestAgentCandidates() []string {
	c := []string{filepath.Join(filepath.Dir(in.Exe), GuestAgentBinary)}
	if in.App != "" {
		c = append(c, filepath.Join(in.App, "Contents", "Resources", GuestAgentBinary))
	}
	return c
}

// HelperCandidates lists where the helper may be, in order: next to the
// executable, then in the app's helper bundle.
func (in Install) HelperCandidates() []string {
	c := []string{filepath.Join(filepath.Dir(in.Exe), HelperBinary)}
	if in.App != "" {
		c = append(c, HelperInApp(in.App))
	}
	return c
}

// HelperInApp is the helper executable inside the app bundle app.
func HelperInApp(app string) string {
	return filepath.Join(app, "Contents", "Helpers", HelperBundle, "Contents", "MacOS", HelperBinary)
}

// FirstExecutable returns the first of candidates that is a regular,
// executable file.
func FirstExecutable(candidates []string) (string, bool) {
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, true
		}
	}
	return "", false
}
