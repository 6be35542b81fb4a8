package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// newTestFile opens a file store in a fresh directory, logging into buf.
func newTestFile(t *testing.T) (*File, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	f, err := NewFile(filepath.Join(t.TempDir(), "secrets.json"), slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	return f, &buf
}

// readJSON returns what the file on disk holds.
func readJSON(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s is not a JSON object of strings: %v\n%s", path, err, data)
	}
	return m
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return info.Mode().Perm()
}

func TestFileRoundTrip(t *testing.T) {
	f, _ := newTestFile(t)
	if f.Kind() != KindFile {
		t.Errorf("Kind() = %q, want %q", f.Kind(), KindFile)
	}
	if err := f.Set("provider/openai", "sk-one"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := f.Set("provider/anthropic", "sk-two"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := f.Set("provider/openai", "sk-one-rotated"); err != nil {
		t.Fatalf("Set (replace): %v", err)
	}
	if got, err := f.Get("provider/openai"); err != nil || got != "sk-one-rotated" {
		t.Errorf("Get(openai) = %q, %v; want sk-one-rotated", got, err)
	}

	// A second store on the same file, as after a restart, sees the same.
	g, err := NewFile(f.Path(), nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got, err := g.Get("provider/anthropic"); err != nil || got != "sk-two" {
		t.Errorf("after reopen Get(anthropic) = %q, %v; want sk-two", got, err)
	}
	want := map[string]string{"provider/openai": "sk-one-rotated", "provider/anthropic": "sk-two"}
	if got := readJSON(t, f.Path()); !equal(got, want) {
		t.Errorf("file holds %v, want %v", got, want)
	}
	// No temporary files are left behind.
	entries, err := os.ReadDir(filepath.Dir(f.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only secrets.json", names)
	}
}

func TestFileCreatedPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "home")
	path := filepath.Join(dir, "secrets.json")
	f, err := NewFile(path, nil)
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	if err := f.Set("provider/x", "v"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got := perm(t, path); got != 0o600 {
		t.Errorf("new file mode = %04o, want 0600", got)
	}
	if got := perm(t, dir); got&0o077 != 0 {
		t.Errorf("created directory mode = %04o, want no group/other access", got)
	}
}

func TestFileLooserModeTightened(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(path, []byte(`{"provider/x":"v"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // WriteFile's mode is subject to umask
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f, err := NewFile(path, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatalf("NewFile: %v", err)
	}
	if got := perm(t, path); got != 0o600 {
		t.Errorf("mode after open = %04o, want 0600", got)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "0644") {
		t.Errorf("no warning naming the old mode was logged: %q", buf.String())
	}
	if got, err := f.Get("provider/x"); err != nil || got != "v" {
		t.Errorf("Get = %q, %v; want v", got, err)
	}

	// A file already 0600 is left alone, silently.
	buf.Reset()
	if _, err := NewFile(path, slog.New(slog.NewTextHandler(&buf, nil))); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("reopening a 0600 file logged %q", buf.String())
	}
}

func TestFileCorruptIsAnErrorAndUntouched(t *testing.T) {
	for name, content := range map[string]string{
		"truncated": `{"provider/x": "v`,
		"array":     `["provider/x"]`,
		"number":    `{"provider/x": 42}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "secrets.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := NewFile(path, nil)
			if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), path) {
				t.Errorf("NewFile on a corrupt file: err = %v, want one saying %s is corrupt", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("file changed to %q", got)
			}
		})
	}

	// A file corrupted while open: Set and Delete fail and leave it as is.
	f, _ := newTestFile(t)
	if err := f.Set("provider/x", "v"); err != nil {
		t.Fatal(err)
	}
	const junk = "not json"
	if err := os.WriteFile(f.Path(), []byte(junk), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("provider/y", "w"); err == nil {
		t.Error("Set on a corrupt file succeeded")
	}
	if err := f.Delete("provider/x"); err == nil {
		t.Error("Delete on a corrupt file succeeded")
	}
	if _, err := f.Get("provider/x"); err == nil || errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get on a corrupt file: err = %v, want a corruption error, not not-found", err)
	}
	if got, _ := os.ReadFile(f.Path()); string(got) != junk {
		t.Errorf("corrupt file changed to %q", got)
	}
}

func TestFileConcurrentSet(t *testing.T) {
	f, _ := newTestFile(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- f.Set(fmt.Sprintf("provider/%d", i), fmt.Sprintf("key-%d", i))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Set: %v", err)
		}
	}
	got := readJSON(t, f.Path())
	if len(got) != n {
		t.Errorf("file holds %d secrets, want %d: %v", len(got), n, got)
	}
	for i := range n {
		if v := got[fmt.Sprintf("provider/%d", i)]; v != fmt.Sprintf("key-%d", i) {
			t.Errorf("provider/%d = %q, want key-%d", i, v, i)
		}
	}
}

func TestFileDeleteIdempotent(t *testing.T) {
	f, _ := newTestFile(t)
	// Deleting from a store whose file does not exist yet.
	if err := f.Delete("provider/x"); err != nil {
		t.Fatalf("Delete before any Set: %v", err)
	}
	if err := f.Set("provider/x", "v"); err != nil {
		t.Fatal(err)
	}
	if err := f.Set("provider/y", "w"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := f.Delete("provider/x"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, err := f.Get("provider/x"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want not found", err)
	}
	if got, want := readJSON(t, f.Path()), map[string]string{"provider/y": "w"}; !equal(got, want) {
		t.Errorf("file holds %v, want %v", got, want)
	}
}

func TestFileGetAbsentIsNotFound(t *testing.T) {
	f, _ := newTestFile(t)
	_, err := f.Get("provider/missing")
	if !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Get on an empty store: err = %v, want errdefs.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "provider/missing") {
		t.Errorf("error %q does not name the ref", err)
	}
	if err := f.Set("provider/other", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get("provider/missing"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get of an absent ref: err = %v, want errdefs.ErrNotFound", err)
	}
}

func TestFileRejectsEmpty(t *testing.T) {
	f, _ := newTestFile(t)
	for name, err := range map[string]error{
		"Set empty ref":   f.Set("", "v"),
		"Set empty value": f.Set("provider/x", ""),
		"Delete empty":    f.Delete(""),
	} {
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: err = %v, want errdefs.ErrInvalid", name, err)
		}
	}
	if _, err := f.Get(""); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("Get empty ref: err = %v, want errdefs.ErrInvalid", err)
	}
	if _, err := os.Stat(f.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected calls created the file: %v", err)
	}
}

func TestNewFileRejectsDirectory(t *testing.T) {
	if _, err := NewFile(t.TempDir(), nil); err == nil {
		t.Error("NewFile on a directory succeeded")
	}
}

func TestEnvOverride(t *testing.T) {
	env := map[string]string{
		"HIVECREW_API_KEY_OPEN_ROUTER": "sk-or",
		"HIVECREW_API_KEY_OPENAI":      "sk-oa",
		"HIVECREW_API_KEY_GPT_4O_MINI": "sk-mini",
		"HIVECREW_API_KEY_EMPTY":       "",
	}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		provider, wantVar, wantValue string
		wantOK                       bool
	}{
		{"Open Router", "HIVECREW_API_KEY_OPEN_ROUTER", "sk-or", true},
		{"open-router", "HIVECREW_API_KEY_OPEN_ROUTER", "sk-or", true},
		{"  --Open__Router!! ", "HIVECREW_API_KEY_OPEN_ROUTER", "sk-or", true},
		{"OpenAI", "HIVECREW_API_KEY_OPENAI", "sk-oa", true},
		{"gpt-4o mini", "HIVECREW_API_KEY_GPT_4O_MINI", "sk-mini", true},
		{"Ünïcode", "HIVECREW_API_KEY_N_CODE", "", false},
		{"Empty", "HIVECREW_API_KEY_EMPTY", "", false},
		{"Anthropic", "HIVECREW_API_KEY_ANTHROPIC", "", false},
		{"", "", "", false},
		{"!!!", "", "", false},
	} {
		if got := EnvVar(tc.provider); got != tc.wantVar {
			t.Errorf("EnvVar(%q) = %q, want %q", tc.provider, got, tc.wantVar)
		}
		v, ok := EnvOverride(tc.provider, getenv)
		if v != tc.wantValue || ok != tc.wantOK {
			t.Errorf("EnvOverride(%q) = %q, %v; want %q, %v", tc.provider, v, ok, tc.wantValue, tc.wantOK)
		}
	}
	// The bare prefix is never looked up.
	asked := ""
	EnvOverride("---", func(k string) string { asked = k; return "x" })
	if asked != "" {
		t.Errorf("EnvOverride(%q) looked up %q", "---", asked)
	}
}

func TestSessionBusAddress(t *testing.T) {
	none := func(string) bool { return false }
	socket := func(p string) bool { return p == "/run/user/1000/bus" }
	for _, tc := range []struct {
		name   string
		env    string
		exists func(string) bool
		want   string
		wantOK bool
	}{
		{"env wins", "unix:path=/tmp/bus", socket, "unix:path=/tmp/bus", true},
		{"runtime socket", "", socket, "unix:path=/run/user/1000/bus", true},
		{"nothing", "", none, "", false},
		{"autolaunch means unset", "autolaunch:", socket, "unix:path=/run/user/1000/bus", true},
		{"autolaunch would spawn a bus", "autolaunch:", none, "", false},
	} {
		getenv := func(k string) string {
			if k == "DBUS_SESSION_BUS_ADDRESS" {
				return tc.env
			}
			return ""
		}
		got, ok := sessionBusAddress(getenv, 1000, tc.exists)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: sessionBusAddress = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
