// Package bundle checks the macOS app bundle as scripts/bundle-app
// assembles it (here from this machine's binaries: the tree and the plists
// are the same on every OS), and the plists of Resources/.
package bundle

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/app/desktop"
	"github.com/hivecrew/hivecrew/tests/plisttest"
	"github.com/hivecrew/hivecrew/tests/testbin"
)

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func read(t *testing.T, path string) map[string]any {
	t.Helper()
	p, err := plisttest.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBundleTree: the bundle has the documented files, executables
// executable, and every plist parses with the keys macOS needs.
func TestBundleTree(t *testing.T) {
	bin, cleanup, err := testbin.BuildAll()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root(), "scripts", "bundle-app"), "--bin", bin, "--out", out, "--version", "v1.4.2-3-gabcdef")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundle-app: %v\n%s", err, b)
	}
	app := filepath.Join(out, "Hivecrew.app", "Contents")
	var files []string
	filepath.WalkDir(app, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(app, p)
			files = append(files, rel)
		}
		return nil
	})
	want := []string{
		"Info.plist", "PkgInfo", "MacOS/hivecrew",
		"Helpers/HivecrewHelper.app/Contents/Info.plist", "Helpers/HivecrewHelper.app/Contents/PkgInfo",
		"Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper",
		"Resources/hivecrew-guestagent", "Resources/com.hivecrew.guestagent.plist", "Resources/entitlements.plist",
		"Resources/MenuBar-idleTemplate.png", "Resources/MenuBar-workingTemplate.png", "Resources/MenuBar-attentionTemplate.png",
	}
	for _, f := range want {
		if !slices.Contains(files, f) {
			t.Errorf("bundle lacks %s (has %v)", f, files)
		}
	}
	if !slices.Contains(files, "Resources/AppIcon.icns") && !slices.Contains(files, "Resources/AppIcon.png") {
		t.Error("bundle has no app icon")
	}
	for _, f := range files {
		// The helper lives in its own bundle only: two executables of
		// com.hivecrew.app confuse LaunchServices (issue 16.8).
		if strings.HasPrefix(f, "MacOS/") && f != "MacOS/hivecrew" {
			t.Errorf("the app's Contents/MacOS holds %s", f)
		}
	}
	for _, exe := range []string{"MacOS/hivecrew", "Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper", "Resources/hivecrew-guestagent"} {
		if fi, err := os.Stat(filepath.Join(app, exe)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", exe, err)
		}
	}
	// The bundled binary is the one that was built: it runs and says so.
	if b, err := exec.Command(filepath.Join(app, "MacOS", "hivecrew"), "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "hivecrew ") {
		t.Errorf("bundled hivecrew version: %q %v", b, err)
	}

	info := read(t, filepath.Join(app, "Info.plist"))
	for k, v := range map[string]any{
		"CFBundleIdentifier": "com.hivecrew.app", "CFBundleExecutable": "hivecrew", "CFBundlePackageType": "APPL",
		"LSUIElement": true, "LSMinimumSystemVersion": "15.0", "CFBundleShortVersionString": "1.4.2",
		"CFBundleVersion": "v1.4.2-3-gabcdef", "CFBundleIconFile": "AppIcon",
	} {
		if info[k] != v {
			t.Errorf("Info.plist %s = %v, want %v", k, info[k], v)
		}
	}
	if ats, _ := info["NSAppTransportSecurity"].(map[string]any); ats["NSAllowsLocalNetworking"] != true {
		t.Error("Info.plist does not allow the web views to reach the local helper over http")
	}
	helperInfo := read(t, filepath.Join(app, "Helpers", "HivecrewHelper.app", "Contents", "Info.plist"))
	for k, v := range map[string]any{
		// The app yields activation to this id for the takeover window.
		"CFBundleIdentifier": desktop.HelperBundleID, "CFBundleExecutable": "hivecrew-helper", "CFBundlePackageType": "APPL",
		"LSUIElement": true, "LSMinimumSystemVersion": "15.0", "CFBundleShortVersionString": "1.4.2",
	} {
		if helperInfo[k] != v {
			t.Errorf("helper Info.plist %s = %v, want %v", k, helperInfo[k], v)
		}
	}
	ent := read(t, filepath.Join(app, "Resources", "entitlements.plist"))
	if ent["com.apple.security.virtualization"] != true || ent["com.apple.security.network.client"] != true {
		t.Errorf("entitlements: %v", ent)
	}
	guest := read(t, filepath.Join(app, "Resources", "com.hivecrew.guestagent.plist"))
	if guest["Label"] != "com.hivecrew.guestagent" {
		t.Errorf("guest agent LaunchAgent: %v", guest)
	}
}

// TestBundledHelperFindsTheGuestAgent answers issue 16.1: the helper as
// installed in Hivecrew.app (no guest agent next to it) finds the one
// bundle-app put in Contents/Resources; `hivecrew-helper paths` says which.
func TestBundledHelperFindsTheGuestAgent(t *testing.T) {
	bin, cleanup, err := testbin.BuildAll()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	out := t.TempDir()
	if b, err := exec.Command(filepath.Join(root(), "scripts", "bundle-app"), "--bin", bin, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("bundle-app: %v\n%s", err, b)
	}
	app := filepath.Join(out, "Hivecrew.app")
	helper := filepath.Join(app, "Contents", "Helpers", "HivecrewHelper.app", "Contents", "MacOS", "hivecrew-helper")
	paths := func() (string, error) {
		cmd := exec.Command(helper, "paths", "--home", t.TempDir())
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	b, err := paths()
	want := "guest agent: " + filepath.Join(app, "Contents", "Resources", "hivecrew-guestagent") + "\n"
	if err != nil || !strings.Contains(b, want) {
		t.Fatalf("bundled helper paths: %v\n%s\nwant a line %q", err, b, want)
	}
	// Without the bundled agent it says where it looked, and fails.
	os.Remove(filepath.Join(app, "Contents", "Resources", "hivecrew-guestagent"))
	b, err = paths()
	if err == nil || !strings.Contains(b, "guest agent: none") || !strings.Contains(b, "Contents/Resources/hivecrew-guestagent") {
		t.Fatalf("helper without an agent: %v\n%s", err, b)
	}
}

// TestBundleRefusesMissingBinaries: a missing binary is a clear error, not
// a half-built bundle.
func TestBundleRefusesMissingBinaries(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root(), "scripts", "bundle-app"), "--bin", t.TempDir(), "--out", out)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "is missing or not executable") {
		t.Fatalf("bundle-app without binaries: %v %s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "Hivecrew.app")); !os.IsNotExist(err) {
		t.Fatal("a bundle was left behind")
	}
}
