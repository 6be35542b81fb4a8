package bundle

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMacOSScriptsRefuseOtherOSes: signing, notarising and the DMG say
// they need macOS instead of failing obscurely.
func TestMacOSScriptsRefuseOtherOSes(t *testing.T) {
	for _, s := range []string{"sign-app", "notarize-app", "make-dmg"} {
		b, err := exec.Command(filepath.Join(root(), "scripts", s)).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "needs macOS") {
			t.Errorf("%s on %s: %v %s", s, runtime.GOOS, err, b)
		}
	}
}
