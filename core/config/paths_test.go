package config

import (
	"os"
	"path/filepath"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDataDir(t *testing.T) {
	for _, c := range []struct {
		name string
		goos string
		env  map[string]string
		want string
	}{
		{"macOS", "darwin", nil, "/Users/ada/Library/Application Support/Hivecrew"},
		{"linux default", "linux", nil, "/Users/ada/.local/share/hivecrew"},
		{"linux XDG", "linux", map[string]string{"XDG_DATA_HOME": "/data/xdg"}, "/data/xdg/hivecrew"},
		{"linux relative XDG is ignored", "linux", map[string]string{"XDG_DATA_HOME": "rel"}, "/Users/ada/.local/share/hivecrew"},
		{"override on macOS", "darwin", map[string]string{HomeEnv: "/srv/hc"}, "/srv/hc"},
		{"override on linux beats XDG", "linux", map[string]string{HomeEnv: "/srv/hc", "XDG_DATA_HOME": "/x"}, "/srv/hc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DataDir(c.goos, env(c.env), "/Users/ada")
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("DataDir = %q, want %q", got, c.want)
			}
		})
	}
}

func TestDataDirWithoutHome(t *testing.T) {
	if _, err := DataDir("linux", env(nil), ""); err == nil {
		t.Fatal("no home and no override gave no error")
	}
	got, err := DataDir("linux", env(map[string]string{HomeEnv: "/srv/hc"}), "")
	if err != nil || got != "/srv/hc" {
		t.Fatalf("override without home = %q, %v", got, err)
	}
}

func TestEnsureCreatesPrivateFolders(t *testing.T) {
	p := Paths{Home: filepath.Join(t.TempDir(), "hc")}
	if err := os.MkdirAll(p.Home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{p.Home, p.Sessions(), p.Tasks(), p.VMs(), p.Templates(), p.Logs()} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want a private directory", dir, fi.Mode())
		}
	}
	if err := (Paths{Home: "relative"}).Ensure(); err == nil {
		t.Fatal("a relative data directory was accepted")
	}
}
