package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// minMacOS is the one macOS release Hivecrew requires, everywhere: the
// deployment target of every darwin build (clang's -target, the cgo
// files' -mmacosx-version-min), LSMinimumSystemVersion in both
// Info.plists, scripts/mac-smoke's platform check, the README and docs/macos.md
// (TestOneMacOSVersion holds them to it). macOS 15: SCScreenshotManager,
// the Virtualization framework's save and restore, and the hotkey rules
// the kill switch follows.
const minMacOS = "15.0"

// sdkEnv names the SDK folder.
const sdkEnv = "HIVECREW_DARWIN_SDK"

// sdkVersion reads a macOS SDK's version from its SDKSettings.json.
func sdkVersion(sdk string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(sdk, "SDKSettings.json"))
	if err != nil {
		return "", fmt.Errorf("%s is not a macOS SDK (no SDKSettings.json): %w", sdk, err)
	}
	var s struct{ Version string }
	if err := json.Unmarshal(raw, &s); err != nil || s.Version == "" {
		return "", fmt.Errorf("%s: SDKSettings.json says no Version", sdk)
	}
	if _, err := parseVersion(s.Version); err != nil {
		return "", fmt.Errorf("%s: SDKSettings.json: %w", sdk, err)
	}
	return s.Version, nil
}

// parseVersion reads "15", "15.2" or "15.2.1" as major, minor.
func parseVersion(v string) ([2]int, error) {
	var out [2]int
	parts := strings.Split(v, ".")
	if len(parts) > 3 {
		return out, fmt.Errorf("version %q is not major.minor", v)
	}
	for i, p := range parts[:min(2, len(parts))] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("version %q is not major.minor", v)
		}
		out[i] = n
	}
	return out, nil
}

// olderThan reports whether version v is older than want.
func olderThan(v, want string) bool {
	a, errA := parseVersion(v)
	b, errB := parseVersion(want)
	if errA != nil || errB != nil {
		return true
	}
	return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
}

// checkSDK refuses an SDK older than minMacOS, for make app: vz compiles
// its macOS 12.3 to 15 code out against an older SDK (its
// virtualization_helper.h), and the app then raises at run time where it
// calls it (save and restore, the takeover window's newer options).
func checkSDK(sdk string) (string, error) {
	v, err := sdkVersion(sdk)
	if err != nil {
		return "", err
	}
	if olderThan(v, minMacOS) {
		return v, fmt.Errorf("the macOS SDK at %s is %s, older than macOS %s, which Hivecrew requires: vz would compile its newer code out and raise at run time; install Xcode or its command-line tools for macOS %s or later (xcode-select -p shows which are used)", sdk, v, minMacOS, minMacOS)
	}
	return v, nil
}
