package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

func TestRunShellBasics(t *testing.T) {
	h := newHarness(t, nil)
	res, err := call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: `pwd; echo "$HIVECREW_SHARED"; echo oops >&2; exit 3`})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if res.ExitCode != 3 || len(lines) != 2 || lines[0] != h.shared || lines[1] != h.shared || res.Stderr != "oops\n" {
		t.Fatalf("result = %+v", res)
	}
	res, err = call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "pwd", Cwd: "outbox"})
	if err != nil || strings.TrimSpace(res.Stdout) != filepath.Join(h.shared, "outbox") {
		t.Fatalf("cwd outbox: %+v, %v", res, err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "true", Cwd: "nope"}); codeOf(err) != protocol.CodeNotFound {
		t.Fatalf("missing cwd = %v", err)
	}
	res, err = call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "sleep 5", TimeoutSeconds: 0.2})
	if err != nil || !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("timeout: %+v, %v", res, err)
	}
	// Issue 34.12: a timeout whose nanoseconds overflow an int64 is the
	// longest one, not a negative one that ends the command at once.
	for _, secs := range []float64{1e12, 1e300, 9.3e9} {
		res, err = call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "sleep 0.3; echo ran", TimeoutSeconds: secs})
		if err != nil || res.TimedOut || res.ExitCode != 0 || res.Stdout != "ran\n" {
			t.Fatalf("timeoutSeconds %g: %+v, %v", secs, res, err)
		}
	}
}

func TestRunShellTruncatesOverTheCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ShellOutputCap = 1000 })
	res, err := call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "head -c 100000 /dev/zero | tr '\\0' x"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Stdout) != 1000 || res.ExitCode != 0 {
		t.Fatalf("truncated=%v stdout=%d bytes exit=%d; want truncated 1000 bytes", res.Truncated, len(res.Stdout), res.ExitCode)
	}
}

// TestRunShellStreamsBeforeItFinishes: the first line arrives as a
// $/shellOutput notification while the command is still running.
func TestRunShellStreamsBeforeItFinishes(t *testing.T) {
	h := newHarness(t, nil)
	done := make(chan time.Time, 1)
	go func() {
		call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "echo first; sleep 1; echo second"})
		done <- time.Now()
	}()
	var firstAt time.Time
	deadline := time.After(5 * time.Second)
	for firstAt.IsZero() {
		select {
		case n := <-h.notes:
			if n.Method() != protocol.NotifyShellOutput {
				continue
			}
			var p protocol.ShellOutputParams
			n.UnmarshalParams(&p)
			if p.Stream == "stdout" && strings.Contains(p.Data, "first") {
				if string(mustJSON(t, p.RequestID)) != "1" {
					t.Fatalf("shell output for request %v, want 1", p.RequestID)
				}
				firstAt = time.Now()
			}
		case <-deadline:
			t.Fatal("no $/shellOutput with the first line")
		}
	}
	finished := <-done
	if gap := finished.Sub(firstAt); gap < 500*time.Millisecond {
		t.Fatalf("first output came only %s before the end: not streamed", gap)
	}
}

// TestRunShellCancel: a cancelled command answers within 200 ms and its
// process group is gone.
func TestRunShellCancel(t *testing.T) {
	h := newHarness(t, nil)
	pidFile := filepath.Join(h.shared, "workspace", "pid")
	errc := make(chan error, 1)
	go func() {
		_, err := h.cli.Call(context.Background(), protocol.MethodRunShell, protocol.ShellParams{Command: "sleep 60 & echo $! > " + pidFile + "; wait"})
		errc <- transport.FromRPC(err)
	}()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		t.Fatal("command did not start")
	}
	t0 := time.Now()
	h.cli.Notify(context.Background(), protocol.NotifyCancelRequest, protocol.CancelParams{ID: 1})
	select {
	case err := <-errc:
		if codeOf(err) != protocol.CodeCancelled {
			t.Fatalf("cancelled run_shell = %v", err)
		}
		if d := time.Since(t0); d > 200*time.Millisecond {
			t.Fatalf("cancel took %s, want <= 200 ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run_shell not cancelled")
	}
	// The background sleep was in the command's process group: it is gone.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still alive after cancel", pid)
		}
	}
}

// TestRunShellEnv: env's variables reach the command; a bad name, a NUL
// byte and too many variables are invalid params, and nothing runs.
func TestRunShellEnv(t *testing.T) {
	h := newHarness(t, nil)
	res, err := call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{
		Command: `printf '%s|%s' "$GREETING" "$_multi_2"`, Env: map[string]string{"GREETING": "hello world", "_multi_2": "a\nb"}})
	if err != nil || res.Stdout != "hello world|a\nb" {
		t.Fatalf("env: %+v, %v", res, err)
	}
	marker := filepath.Join(h.shared, "ran")
	many := map[string]string{}
	for i := range protocol.MaxShellEnv + 1 {
		many["V"+strconv.Itoa(i)] = "x"
	}
	for name, env := range map[string]map[string]string{
		"a digit first": {"1ABC": "x"}, "a dash": {"A-B": "x"}, "an equals sign": {"A=B": "x"}, "empty": {"": "x"},
		"a NUL byte": {"OK": "a\x00b"}, "too many": many, "too large": {"BIG": strings.Repeat("x", protocol.MaxShellEnvBytes)},
	} {
		_, err := call[protocol.ShellResult](t, h.cli, protocol.MethodRunShell, protocol.ShellParams{Command: "touch " + marker, Env: env})
		if codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("%s: %v, want invalid params", name, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command with a bad env ran")
	}
}
