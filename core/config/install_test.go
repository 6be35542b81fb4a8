package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLocateInstall: the app bundle is found from any executable inside
// it, nested helper bundle included, and a plain folder has none.
func TestLocateInstall(t *testing.T) {
	for _, c := range []struct{ exe, app string }{
		{"/work/bin/hivecrew-helper", ""},
		{"/Applications/Hivecrew.app/Contents/MacOS/hivecrew", "/Applications/Hivecrew.app"},
		{"/Applications/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper", "/Applications/Hivecrew.app"},
		{"/Users/a b/Hivecrew copy.app/Contents/MacOS/hivecrew", "/Users/a b/Hivecrew copy.app"},
		// ".app" alone, or an .app folder without Contents, is not a bundle.
		{"/x/.app/Contents/MacOS/hivecrew", ""},
		{"/x/Tools.app/bin/hivecrew", ""},
	} {
		if got := LocateInstall(c.exe).App; got != c.app {
			t.Errorf("LocateInstall(%q).App = %q, want %q", c.exe, got, c.app)
		}
	}
}

// TestInstallCandidates: the helper inside Hivecrew.app looks for the guest
// agent in the app's Resources (where scripts/bundle-app puts it) after
// its own folder, and the app finds the helper in its helper bundle.
func TestInstallCandidates(t *testing.T) {
	helper := LocateInstall("/A/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper")
	want := []string{
		"/A/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-guestagent",
		"/A/Hivecrew.app/Contents/Resources/hivecrew-guestagent",
	}
	if got := helper.GuestAgentCandidates(); !slices.Equal(got, want) {
		t.Errorf("guest agent candidates = %q, want %q", got, want)
	}
	app := LocateInstall("/A/Hivecrew.app/Contents/MacOS/hivecrew")
	want = []string{"/A/Hivecrew.app/Contents/MacOS/hivecrew-helper", "/A/Hivecrew.app/Contents/Helpers/HivecrewHelper.app/Contents/MacOS/hivecrew-helper"}
	if got := app.HelperCandidates(); !slices.Equal(got, want) {
		t.Errorf("helper candidates = %q, want %q", got, want)
	}
	bin := LocateInstall("/src/bin/hivecrew-helper")
	if got := bin.GuestAgentCandidates(); !slices.Equal(got, []string{"/src/bin/hivecrew-guestagent"}) {
		t.Errorf("bin/ guest agent candidates = %q", got)
	}
}

// TestFirstExecutable: a folder, a file without the execute bit and a
// missing file are passed over.
func TestFirstExecutable(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "folder")
	plain := filepath.Join(dir, "plain")
	exe := filepath.Join(dir, "exe")
	os.Mkdir(folder, 0o755)
	os.WriteFile(plain, []byte("x"), 0o644)
	os.WriteFile(exe, []byte("x"), 0o755)
	got, ok := FirstExecutable([]string{filepath.Join(dir, "missing"), folder, plain, exe})
	if !ok || got != exe {
		t.Fatalf("FirstExecutable = %q %v, want %q", got, ok, exe)
	}
	if got, ok := FirstExecutable([]string{folder, plain}); ok {
		t.Fatalf("FirstExecutable found %q among no executables", got)
	}
}
