package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSDKCheckRefusesAnOlderSDK: make app's check refuses an SDK older
// than minMacOS (vz would compile its newer code out) and a folder that is
// no SDK, and takes the release itself and newer ones.
func TestSDKCheckRefusesAnOlderSDK(t *testing.T) {
	for _, v := range []string{"12.0", "14.5", "14"} {
		if _, err := checkSDK(writeSDK(t, v)); err == nil || !strings.Contains(err.Error(), "older than macOS "+minMacOS) {
			t.Errorf("SDK %s: %v, want it refused as older than %s", v, err, minMacOS)
		}
	}
	for _, v := range []string{minMacOS, "15.2", "15.4.1", "26.0"} {
		if got, err := checkSDK(writeSDK(t, v)); err != nil || got != v {
			t.Errorf("SDK %s: %q, %v", v, got, err)
		}
	}
	if _, err := checkSDK(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a macOS SDK") {
		t.Errorf("a folder without SDKSettings.json: %v", err)
	}
	if _, err := checkSDK(writeSDK(t, "fifteen")); err == nil {
		t.Error("an SDK whose version is not a number was taken")
	}
}

// TestOneMacOSVersion: every place that names the macOS release Hivecrew
// requires names minMacOS: both Info.plists, every cgo file's deployment
// target, scripts/mac-smoke, the Makefile's message, the README and docs/.
func TestOneMacOSVersion(t *testing.T) {
	root := "../.."
	major := strings.TrimSuffix(minMacOS, ".0")
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	plist := regexp.MustCompile(`<key>LSMinimumSystemVersion</key>\s*<string>([^<]*)</string>`)
	for _, f := range []string{"Resources/Info.plist", "Resources/HelperInfo.plist"} {
		if m := plist.FindStringSubmatch(read(f)); m == nil || m[1] != minMacOS {
			t.Errorf("%s: LSMinimumSystemVersion %v, want %s", f, m, minMacOS)
		}
	}
	// Every deployment target in the darwin Go and Objective-C files.
	target := regexp.MustCompile(`-mmacosx-version-min=([0-9.]+)|Deployment target macOS ([0-9.]+)`)
	seen := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, "_darwin.go") || strings.HasSuffix(path, "_darwin_arm64.go") || strings.HasSuffix(path, ".m")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range target.FindAllStringSubmatch(string(b), -1) {
			seen++
			if v := m[1] + m[2]; v != minMacOS && v != major {
				t.Errorf("%s: deployment target %s, want %s", path, v, minMacOS)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 3 {
		t.Errorf("found %d deployment targets in the darwin files: the walk missed them", seen)
	}
	smoke := read("scripts/mac-smoke")
	if !strings.Contains(smoke, "macOS "+major+" or later on Apple silicon") || !strings.Contains(smoke, `-ge `+major+` ]`) {
		t.Errorf("scripts/mac-smoke does not require macOS %s (its platform check and message)", major)
	}
	if other := regexp.MustCompile(`macOS 1[0-9]\+? or later|macOS 1[0-9]\+ on Apple|-ge 1[0-9] \]`).FindAllString(smoke, -1); len(other) > 0 {
		for _, o := range other {
			if !strings.Contains(o, major) {
				t.Errorf("scripts/mac-smoke still says %q", o)
			}
		}
	}
	if mk := read("Makefile"); !strings.Contains(mk, "macOS "+major+"+") || !strings.Contains(mk, "-sdk-check") {
		t.Errorf("the Makefile's app target does not say macOS %s+ or does not check the SDK", major)
	}
	// The README and the macOS page say what a Mac needs; no page of the
	// documentation names another release.
	for _, doc := range []string{"README.md", "docs/macos.md"} {
		if !strings.Contains(read(doc), "macOS "+major+" or later") {
			t.Errorf("%s does not require macOS %s", doc, major)
		}
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	for _, doc := range append([]string{"README.md"}, docs...) {
		doc = strings.TrimPrefix(doc, root+string(filepath.Separator))
		for _, m := range regexp.MustCompile(`arm64-apple-macos[0-9]+|macOS 1[0-9] or later`).FindAllString(read(doc), -1) {
			if !strings.HasSuffix(m, "macos"+major) && !strings.Contains(m, "macOS "+major+" ") {
				t.Errorf("%s says %q", doc, m)
			}
		}
	}
}
