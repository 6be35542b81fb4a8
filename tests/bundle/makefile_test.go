package bundle

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// dryRun is `make -n TARGET UNAME=os`: the commands make would run on that
// OS, without running them.
func dryRun(t *testing.T, target, uname string) string {
	t.Helper()
	cmd := exec.Command("make", "-n", target, "UNAME="+uname, "VERSION=test")
	cmd.Dir = root()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s UNAME=%s: %v\n%s", target, uname, err, b)
	}
	return string(b)
}

// TestMakeRunOnAMac answers issue 16.2: on a Mac, `make build` (and so
// `make run` and `make test`) builds the guest agent with cgo (its darwin
// driver does not exist without it: "undefined: darwin.New"), and signs
// the helper ad hoc with entitlements.plist after building it (without
// com.apple.security.virtualization every VM start fails). On Linux the
// agent stays static and nothing is signed.
func TestMakeRunOnAMac(t *testing.T) {
	mac := dryRun(t, "run", "Darwin")
	agent := regexp.MustCompile(`(?m)^CGO_ENABLED=(\d) .*-o bin/hivecrew-guestagent \./guestagent$`)
	if m := agent.FindStringSubmatch(mac); m == nil || m[1] != "1" {
		t.Errorf("make run on a Mac builds the guest agent without cgo:\n%s", mac)
	}
	helperAt := strings.Index(mac, "-o bin/hivecrew-helper ./xpchelper")
	signAt := strings.Index(mac, `codesign --force --sign "-" --entitlements entitlements.plist bin/hivecrew-helper`)
	serveAt := strings.Index(mac, "./bin/hivecrew-helper serve")
	if helperAt < 0 || signAt < helperAt || serveAt < signAt {
		t.Errorf("make run on a Mac must build, then sign the helper with its entitlements, then start it:\n%s", mac)
	}

	// A stable identity instead of ad hoc (no keychain prompt per rebuild).
	cmd := exec.Command("make", "-n", "build", "UNAME=Darwin", "SIGN_IDENTITY=Hivecrew Dev")
	cmd.Dir = root()
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), `codesign --force --sign "Hivecrew Dev" --entitlements entitlements.plist bin/hivecrew-helper`) {
		t.Errorf("SIGN_IDENTITY is not used: %v\n%s", err, b)
	}

	linux := dryRun(t, "run", "Linux")
	if m := agent.FindStringSubmatch(linux); m == nil || m[1] != "0" {
		t.Errorf("make run on Linux builds the guest agent with cgo:\n%s", linux)
	}
	if strings.Contains(linux, "codesign") {
		t.Errorf("make run on Linux calls codesign:\n%s", linux)
	}
}
