package server

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// resolvingDriver answers resolve_app with answer, and records what it
// was asked.
type resolvingDriver struct {
	*fakeDriver
	answer protocol.ResolvedApp
	// mu guards asked.
	mu    sync.Mutex
	asked [][2]string
}

func (d *resolvingDriver) ResolveApp(_ context.Context, name, path string) (protocol.ResolvedApp, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, [2]string{name, path})
	return d.answer, nil
}

// TestResolveAppIsAnsweredByResolvers: a guest announces resolve_app, and
// answers it, only when its driver can resolve.
func TestResolveAppIsAnsweredByResolvers(t *testing.T) {
	h := newHarness(t, nil)
	hello, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, helloParams())
	if err != nil || slices.Contains(hello.Capabilities, protocol.CapResolveApp) {
		t.Fatalf("a driver without resolution announced %v (%v)", hello.Capabilities, err)
	}
	if _, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{App: "xterm"}); codeOf(err) != protocol.CodeMethodNotFound {
		t.Fatalf("resolve_app without resolution = %v, want method not found", err)
	}

	d := &resolvingDriver{fakeDriver: &fakeDriver{}, answer: protocol.ResolvedApp{Found: true, Kind: "program", Executable: "/usr/bin/xterm"}}
	h = newHarness(t, func(c *Config) { c.Driver = d })
	hello, err = call[protocol.HelloResult](t, h.cli, protocol.MethodHello, helloParams())
	if err != nil || !slices.Contains(hello.Capabilities, protocol.CapResolveApp) {
		t.Fatalf("a resolving driver did not announce it: %v (%v)", hello.Capabilities, err)
	}
	got, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{App: "debian-xterm"})
	if err != nil || got.Executable != "/usr/bin/xterm" || got.Target != nil {
		t.Fatalf("resolve_app = %+v, %v", got, err)
	}
	if _, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{}); codeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("resolve_app of nothing = %v, want invalid params", err)
	}
}

// TestResolveAppSaysWhatAFileIs: open_file's file is described by what
// makes it a program (its executable bits, its #! line, a folder such as
// an app bundle), found as open_file finds it: inside the shared folder
// only, and a FIFO in its place does not hold the answer.
func TestResolveAppSaysWhatAFileIs(t *testing.T) {
	d := &resolvingDriver{fakeDriver: &fakeDriver{}, answer: protocol.ResolvedApp{Found: true, Kind: "program", Executable: "/usr/bin/mousepad"}}
	h := newHarness(t, func(c *Config) { c.Driver = d })
	write := func(rel, contents string, mode os.FileMode) {
		p := filepath.Join(h.shared, rel)
		if err := os.WriteFile(p, []byte(contents), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("outbox/report", "#!/usr/bin/env python3\r\nprint('hi')\n", 0o644)
	write("outbox/tool", "\x7fELF...", 0o755)
	write("outbox/notes.txt", "notes\n#!/bin/sh\n", 0o644)
	if err := os.MkdirAll(filepath.Join(h.shared, "inbox/Helper.app/Contents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(h.shared, "outbox/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]protocol.FileFacts{
		"outbox/report":                          {Shebang: "#!/usr/bin/env python3"},
		"outbox/tool":                            {Executable: true},
		"outbox/notes.txt":                       {},
		"inbox/Helper.app":                       {Dir: true},
		"outbox/pipe":                            {},
		filepath.Join(h.shared, "outbox/report"): {Shebang: "#!/usr/bin/env python3"},
	} {
		got, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: path})
		if err != nil || got.Target == nil || *got.Target != want || got.Executable != "/usr/bin/mousepad" {
			t.Errorf("%s: %+v (target %+v), %v; want %+v", path, got, got.Target, err, want)
		}
	}
	d.mu.Lock()
	asked := slices.Clone(d.asked)
	d.mu.Unlock()
	if len(asked) == 0 || asked[0][0] != "" || !filepath.IsAbs(asked[0][1]) || !strings.HasPrefix(asked[0][1], h.shared) {
		t.Fatalf("the driver was asked %q, want the default application of absolute paths in the share", asked)
	}
	if _, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: "outbox/report", App: "python3.11"}); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	if last := d.asked[len(d.asked)-1]; last[0] != "python3.11" || last[1] != filepath.Join(h.shared, "outbox/report") {
		t.Errorf("open_file with an app was asked as %q", last)
	}
	d.mu.Unlock()

	if err := os.Symlink("/etc/passwd", filepath.Join(h.shared, "outbox/escape")); err != nil {
		t.Fatal(err)
	}
	for path, code := range map[string]int{
		"outbox/escape": protocol.CodePermissionDenied, "../x": protocol.CodePermissionDenied,
		"/etc/passwd": protocol.CodePermissionDenied, "outbox/missing": protocol.CodeNotFound,
	} {
		if _, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: path}); codeOf(err) != code {
			t.Errorf("%s: %v, want code %d", path, err, code)
		}
	}
}

// TestResolveAppAnswersWithinBounds: whatever the driver finds, the answer
// stays within the bounds the host enforces, as printable text.
func TestResolveAppAnswersWithinBounds(t *testing.T) {
	long := strings.Repeat("é", protocol.MaxResolvedString)
	d := &resolvingDriver{fakeDriver: &fakeDriver{}, answer: protocol.ResolvedApp{
		Found: true, Kind: "desktop-entry", ID: "id\x1b[31m", Name: "evil\u202etxt.sh", File: long, Executable: "/usr/bin/" + long,
		Args: make([]string, 3*protocol.MaxResolvedList), Categories: []string{"Office\nTerminalEmulator", "\xff"},
	}}
	d.answer.Args[0] = long
	h := newHarness(t, func(c *Config) { c.Driver = d })
	if err := os.WriteFile(filepath.Join(h.shared, "outbox/s"), []byte("#!"+strings.Repeat("\x01b", protocol.MaxShebang)), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := call[protocol.ResolvedApp](t, h.cli, protocol.MethodResolveApp, protocol.ResolveAppParams{Path: "outbox/s"})
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{got.Kind, got.ID, got.Name, got.File, got.Executable, got.MIME, got.Target.Shebang}, append(got.Args, got.Categories...)...)
	for _, s := range all {
		if len(s) > protocol.MaxResolvedString || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
			t.Errorf("unbounded or unprintable: %q", s[:min(len(s), 40)])
		}
	}
	if len(got.Args) != protocol.MaxResolvedList || len(got.Target.Shebang) > protocol.MaxShebang || !strings.HasPrefix(got.Executable, "/usr/bin/é") {
		t.Errorf("%d args, a #! line of %d bytes, executable %.20q", len(got.Args), len(got.Target.Shebang), got.Executable)
	}
}
