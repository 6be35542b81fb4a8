package linux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// appWorld makes a guest's applications in a temporary folder: desktop
// entries, programs on PATH (one through a link), and a default for
// text/plain.
func appWorld(t *testing.T) (bin string) {
	t.Helper()
	dir := t.TempDir()
	bin, apps, config := filepath.Join(dir, "bin"), filepath.Join(dir, "data", "applications"), filepath.Join(dir, "config")
	for _, d := range []string{bin, apps, config} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(apps, "debian-term.desktop"):       "[Desktop Entry]\nType=Application\nName=Term\nExec=termlink -e sh\nCategories=System;TerminalEmulator;\n",
		filepath.Join(apps, "python9.9.desktop"):         "[Desktop Entry]\nType=Application\nName=Python (v9.9)\nExec=" + filepath.Join(bin, "python9.9") + "\nTerminal=true\n",
		filepath.Join(apps, "org.example.notes.desktop"): "[Desktop Entry]\nType=Application\nName=Notes\nExec=notes %F\nMimeType=text/plain;\n",
		filepath.Join(config, "mimeapps.list"):           "[Default Applications]\ntext/plain=org.example.notes.desktop\n",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"realterm", "python9.9", "notes"} {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("realterm", filepath.Join(bin, "termlink")); err != nil {
		t.Fatal(err)
	}
	// xdg-mime and file stay reachable: the guest has them.
	mime, err := exec.LookPath("xdg-mime")
	if err != nil {
		t.Fatal("xdg-mime is not installed (./scripts/deps installs xdg-utils)")
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+filepath.Dir(mime)+string(os.PathListSeparator)+"/usr/bin:/bin")
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_DATA_DIRS", filepath.Join(dir, "none"))
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("XDG_CURRENT_DESKTOP", "")
	return bin
}

// TestResolveAppTakesOpenAppsRoad: a name resolves as OpenApp and
// OpenFile find it (desktop id, Name, program on PATH), to the real path
// of the program its entry runs, with Terminal= and the categories.
func TestResolveAppTakesOpenAppsRoad(t *testing.T) {
	bin := appWorld(t)
	ctx := context.Background()
	d := &Driver{}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(filepath.Join(bin, p)); return r }
	file := filepath.Join(t.TempDir(), "job.txt")
	os.WriteFile(file, []byte("print(1)\n"), 0o644)
	for _, c := range []struct {
		name, path string
		want       protocol.ResolvedApp
	}{
		{"debian-term", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "debian-term", Name: "Term", Executable: real("realterm"),
			Args: []string{"-e", "sh"}, Categories: []string{"System", "TerminalEmulator"}}},
		{"Term", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "debian-term", Name: "Term", Executable: real("realterm"),
			Args: []string{"-e", "sh"}, Categories: []string{"System", "TerminalEmulator"}}},
		{"termlink", file, protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "debian-term", Name: "Term", Executable: real("realterm"),
			Args: []string{"-e", "sh"}, Categories: []string{"System", "TerminalEmulator"}}},
		{"python9.9", "", protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "python9.9", Name: "Python (v9.9)", Executable: real("python9.9"), Terminal: true}},
		{"realterm", file, protocol.ResolvedApp{Found: true, Kind: "program", Executable: real("realterm")}},
		{filepath.Join(bin, "realterm"), file, protocol.ResolvedApp{Found: true, Kind: "program", Executable: real("realterm")}},
		{filepath.Join(bin, "realterm"), "", protocol.ResolvedApp{}}, // open_app takes no paths
		{"nosuch", "", protocol.ResolvedApp{}},
		{"", file, protocol.ResolvedApp{Found: true, Kind: "desktop-entry", ID: "org.example.notes", Name: "Notes", Executable: real("notes"), MIME: "text/plain"}},
	} {
		got, err := d.ResolveApp(ctx, c.name, c.path)
		if err != nil {
			t.Fatalf("%q %q: %v", c.name, c.path, err)
		}
		got.File = ""
		if got.Kind != c.want.Kind || got.ID != c.want.ID || got.Name != c.want.Name || got.Executable != c.want.Executable || got.Found != c.want.Found ||
			got.Terminal != c.want.Terminal || got.MIME != c.want.MIME || !slices.Equal(got.Args, c.want.Args) || !slices.Equal(got.Categories, c.want.Categories) {
			t.Errorf("ResolveApp(%q, %q) = %+v, want %+v", c.name, c.path, got, c.want)
		}
		// What OpenApp and OpenFile would start is what was resolved.
		if _, args, ok := appLaunch(c.name, c.path); c.name != "" && ok != got.Found || ok && c.name != "" && realProgram(t, args[0]) != got.Executable {
			t.Errorf("%q %q: OpenApp's road (%v, %q) is not the resolution's", c.name, c.path, ok, args)
		}
	}
}

// TestResolveAppOfAFileWithNoDefault: a type with no default application
// is said as such, with the type.
func TestResolveAppOfAFileWithNoDefault(t *testing.T) {
	appWorld(t)
	script := filepath.Join(t.TempDir(), "report")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644)
	got, err := (&Driver{}).ResolveApp(context.Background(), "", script)
	if err != nil || got.Found || got.MIME != "text/x-shellscript" {
		t.Fatalf("ResolveApp of a shell script = %+v, %v; want not found, text/x-shellscript", got, err)
	}
}

func realProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := programPath(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
