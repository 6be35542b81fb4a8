package template

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// TestBuiltinManifests: the shipped manifests load and say what they
// build: the minimal Linux set has what the guest agent needs, --full adds
// the desktop applications, --with libreoffice adds LibreOffice.
func TestBuiltinManifests(t *testing.T) {
	if got := BuiltinNames(); !slices.Equal(got, []string{"linux-desktop", "macos-15-base"}) {
		t.Fatalf("BuiltinNames() = %v", got)
	}
	m, err := Builtin("linux-desktop")
	if err != nil {
		t.Fatal(err)
	}
	if m.OS != "linux" || m.Kind != "rootfs" || m.RootFS.Suite != "bookworm" || m.RootFS.AgentPath != "/usr/local/bin/hivecrew-guestagent" {
		t.Fatalf("linux-desktop: %+v", m)
	}
	minimal, err := m.RootFS.PackageSet(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"xvfb", "openbox", "dbus-daemon", "at-spi2-core", "xterm", "xdg-utils", "fonts-dejavu-core"} {
		if !slices.Contains(minimal, p) {
			t.Errorf("the minimal set lacks %s: %v", p, minimal)
		}
	}
	if slices.Contains(minimal, "chromium") || slices.Contains(minimal, "libreoffice-writer") {
		t.Errorf("the minimal set is not minimal: %v", minimal)
	}
	full, _ := m.RootFS.PackageSet(Options{Full: true})
	office, _ := m.RootFS.PackageSet(Options{Extras: []string{"libreoffice"}})
	if !slices.Contains(full, "chromium") || !slices.Contains(full, "mousepad") || !slices.Contains(full, "xvfb") || slices.Contains(full, "libreoffice-writer") {
		t.Errorf("full set: %v", full)
	}
	if !slices.Contains(office, "libreoffice-writer") || slices.Contains(office, "chromium") {
		t.Errorf("libreoffice set: %v", office)
	}
	if !slices.IsSorted(full) || len(slices.Compact(slices.Clone(full))) != len(full) {
		t.Errorf("the package set is not sorted and unique: %v", full)
	}
	if _, err := m.RootFS.PackageSet(Options{Extras: []string{"games"}}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "libreoffice") {
		t.Errorf("unknown extra: %v", err)
	}
	if got := (Options{Full: true, Extras: []string{"b", "a", "b"}}).Flags(); !slices.Equal(got, []string{"full", "a", "b"}) {
		t.Errorf("Flags() = %v", got)
	}
	src := m.RootFS.SourceLines("http://mirror.example/debian")
	if src[0] != "deb http://mirror.example/debian bookworm main" || src[1] != "deb http://mirror.example/debian bookworm-updates main" {
		t.Errorf("SourceLines: %q", src)
	}
	if data, err := m.Script("provision.sh"); err != nil || !strings.HasPrefix(string(data), "#!/bin/sh") {
		t.Errorf("provision.sh: %v", err)
	}
	if _, err := m.Script("../etc/passwd"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a script the manifest does not name: %v", err)
	}

	mac, err := Builtin("macos-15-base")
	if err != nil {
		t.Fatal(err)
	}
	if mac.Kind != "macos" || mac.MacOS.RestoreImage != "latest" || len(mac.MacOS.Setup) < 4 || mac.Resources.DiskGB < 32 ||
		!slices.Equal(mac.MacOS.Agent.Permissions, []string{"screenRecording", "accessibility"}) {
		t.Fatalf("macos-15-base: %+v", mac.MacOS)
	}
	if _, err := Builtin("nope"); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "linux-desktop, macos-15-base") {
		t.Errorf("Builtin(nope) = %v", err)
	}
	if _, err := Builtin("../etc"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("Builtin(../etc) = %v", err)
	}
}

const goodRootFS = `manifestVersion: 1
name: mini
version: 2
displayName: Mini
os: linux
kind: rootfs
rootfs:
  distribution: debian
  suite: bookworm
  mirror: http://deb.debian.org/debian
  packages: [xvfb]
  provision: [setup.sh]
  agentPath: /usr/local/bin/agent
`

// TestParseIsStrict: unknown fields, a script missing from the folder and
// every invalid field are reported, each by name, as one invalid error.
func TestParseIsStrict(t *testing.T) {
	dir := fstest.MapFS{"setup.sh": {Data: []byte("#!/bin/sh\n")}}
	if _, err := Parse([]byte(goodRootFS), dir); err != nil {
		t.Fatalf("a good manifest: %v", err)
	}
	if _, err := Parse([]byte(goodRootFS), fstest.MapFS{}); err == nil || !strings.Contains(err.Error(), "setup.sh is not in the template's folder") {
		t.Errorf("missing script: %v", err)
	}
	if _, err := Parse([]byte(goodRootFS+"colour: blue\n"), dir); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: %v", err)
	}
	bad := strings.NewReplacer("manifestVersion: 1", "manifestVersion: 7", "name: mini", "name: Mini Template",
		"mirror: http://deb.debian.org/debian", "mirror: ftp://x", "packages: [xvfb]", "packages: [xvfb, 'rm -rf']",
		"agentPath: /usr/local/bin/agent", "agentPath: /tmp/agent\n  guestWritable: [/home/user, opt]").Replace(goodRootFS)
	_, err := Parse([]byte(bad), dir)
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("bad manifest: %v", err)
	}
	for _, want := range []string{"manifestVersion is 7", `name "Mini Template"`, "rootfs.mirror", `"rm -rf" is not a Debian package name`,
		`rootfs.agentPath: "/tmp/agent" is inside /tmp`, `"/home/user" is inside /home`, `"opt" must be an absolute`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	mac := `manifestVersion: 1
name: m
version: 1
displayName: M
os: macos
kind: macos
resources: {memoryMB: 1024}
macos:
  restoreImage: http://insecure/x.ipsw
  display: {width: 100, height: 100}
  sharedFolder: /tmp/x
  autoLogin: {user: root user}
  agent: {path: relative, launchAgent: x.txt, permissions: [camera]}
  setup: []
`
	_, err = Parse([]byte(mac), nil)
	for _, want := range []string{"macos.restoreImage", "display 100x100", "sharedFolder", "autoLogin.user", "agent.path", "agent.launchAgent", `"camera"`, "setup: the guided setup has no steps", "at least 2048 MB"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("macOS manifest error lacks %q: %v", want, err)
		}
	}
	if _, err := Parse([]byte(strings.Replace(goodRootFS, "kind: rootfs", "kind: macos", 1)), dir); err == nil || !strings.Contains(err.Error(), "want linux with rootfs") {
		t.Errorf("os/kind mismatch: %v", err)
	}
}

// TestLaunchAgentMatchesResources: the LaunchAgent the setup kit installs,
// made from the macOS manifest, runs the same program with the same
// arguments as Resources/com.hivecrew.guestagent.plist.
func TestLaunchAgentMatchesResources(t *testing.T) {
	mac, err := Builtin("macos-15-base")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../Resources/com.hivecrew.guestagent.plist")
	if err != nil {
		t.Fatal(err)
	}
	values := regexp.MustCompile(`<(key|string|integer|true)/?>([^<]*)`)
	flat := func(s string) []string {
		s = regexp.MustCompile(`(?s)<!--.*?-->`).ReplaceAllString(s, "")
		var out []string
		for _, m := range values.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1]+"="+m[2])
		}
		return out
	}
	if got, w := flat(launchAgentPlist(mac.MacOS)), flat(string(want)); !slices.Equal(got, w) {
		t.Errorf("LaunchAgent from the manifest:\n%q\nResources:\n%q", got, w)
	}
}

// TestCheckRestoreImage: latest, https URLs and .ipsw paths only.
func TestCheckRestoreImage(t *testing.T) {
	for in, ok := range map[string]bool{"latest": true, "https://updates.cdn-apple.com/x/UniversalMac_15.1_Restore.ipsw": true,
		"/Users/me/UniversalMac.ipsw": true, "http://x/y.ipsw": false, "relative.ipsw": false, "/Users/me/disk.img": false, "": false} {
		if err := CheckRestoreImage(in); (err == nil) != ok {
			t.Errorf("CheckRestoreImage(%q) = %v", in, err)
		}
	}
}
