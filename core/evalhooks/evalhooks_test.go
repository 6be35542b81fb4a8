package evalhooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestHooksFileRoundTrip: a task's hooks come back as written; a task
// without any leaves no file and reads as none; a command too large or
// with a NUL is refused, naming its field.
func TestHooksFileRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "task")
	h, err := Of(wire.CreateTask{CheckCommand: "test -f /out/report.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, h); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil || got != h {
		t.Fatalf("read %+v, %v; want %+v", got, err, h)
	}
	empty := filepath.Join(t.TempDir(), "none")
	if err := Write(empty, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a task without hooks made its folder: %v", err)
	}
	if got, err := Read(empty); err != nil || !got.Empty() {
		t.Fatalf("no hooks read as %+v, %v", got, err)
	}
	for _, bad := range []string{strings.Repeat("x", MaxCommand+1), "a\x00b", "\xff"} {
		if _, err := Of(wire.CreateTask{CheckCommand: bad}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "checkCommand") {
			t.Errorf("checkCommand %.20q: %v; want invalid, naming checkCommand", bad, err)
		}
	}
}

type shell struct {
	res protocol.ShellResult
	err error
	got protocol.ShellParams
}

func (s *shell) Shell(_ context.Context, p protocol.ShellParams) (protocol.ShellResult, error) {
	s.got = p
	return s.res, s.err
}

// TestRunKeepsTheVerdict: a check's output is cut to its last OutputCap
// bytes (the verdict is printed last), as valid UTF-8, and marked cut; a
// guest that did not run it says so; the result is saved and read back.
func TestRunKeepsTheVerdict(t *testing.T) {
	long := "é" + strings.Repeat("x", OutputCap) + "PASS"
	sh := &shell{res: protocol.ShellResult{ExitCode: 0, Stdout: long, Stderr: "warn"}}
	res := Run(context.Background(), sh, "check")
	if sh.got.Command != "check" || sh.got.TimeoutSeconds != CheckTimeout.Seconds() {
		t.Fatalf("guest asked %+v", sh.got)
	}
	if !strings.HasSuffix(res.Stdout, "PASS") || len(res.Stdout) > OutputCap || !utf8.ValidString(res.Stdout) || !res.Truncated || res.Stderr != "warn" {
		t.Fatalf("stdout of %d bytes, truncated %v, stderr %q", len(res.Stdout), res.Truncated, res.Stderr)
	}
	if s := Summary(res); s != "The check command exited 0" {
		t.Fatalf("summary %q", s)
	}
	down := Run(context.Background(), &shell{err: errors.New("guest gone")}, "check")
	if down.ExitCode != -1 || !strings.Contains(Summary(down), "did not run: the guest did not run it: guest gone") {
		t.Fatalf("a guest that failed: %+v, %q", down, Summary(down))
	}
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no check read as %v; want not exist", err)
	}
	if err := Save(dir, res); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir)
	if err != nil || back.Stdout != res.Stdout || back.Command != "check" || !back.Truncated {
		t.Fatalf("loaded %+v, %v", back, err)
	}
}
