package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/tests/daemontest"
)

// fakeHelperMain is `hivecrew-helper serve --home DIR` played by the test
// binary: the real helper with the fake VM backend. It first prints its
// process and session ids (into helper.log).
func fakeHelperMain(args []string) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(os.Stderr, "hivecrew-helper (test): want serve")
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	home := fs.String("home", "", "")
	fs.String("addr", "", "") // the fake always takes a free port
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	sid, _ := unix.Getsid(0)
	fmt.Printf("test helper pid=%d sid=%d args=%s\n", os.Getpid(), sid, strings.Join(args, " "))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := daemon.Run(ctx, daemon.Config{
		Paths: config.Paths{Home: *home}, Addr: "127.0.0.1:0", Backend: fake.New(fake.Options{}),
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hivecrew-helper:", err)
		return 1
	}
	return 0
}

// TestStartsTheHelper: with no helper running, a command starts
// hivecrew-helper (found in PATH) detached in its own session, logging to
// <home>/Logs/helper.log, and then runs; the next command finds it running.
func TestStartsTheHelper(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, helperBinary)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	home := daemontest.NewHome(t)
	c := client.NewUnix(config.Paths{Home: home}.Socket())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			return // never started
		}
		for c.Health(ctx) == nil {
			if ctx.Err() != nil {
				t.Error("the started helper did not stop")
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	var out, errOut strings.Builder
	code := run([]string{"ls", "--home", home}, &out, &errOut)
	logPath := filepath.Join(home, "Logs", "helper.log")
	if code != 0 || !strings.HasPrefix(out.String(), "No tasks yet") {
		log, _ := os.ReadFile(logPath)
		t.Fatalf("ls: exit %d\nstdout: %s\nstderr: %s\nhelper log:\n%s", code, out.String(), errOut.String(), log)
	}
	if want := fmt.Sprintf("Starting the helper for %s (log: %s)\n", home, logPath); errOut.String() != want {
		t.Fatalf("stderr = %q, want %q", errOut.String(), want)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`test helper pid=(\d+) sid=(\d+) args=(.*)\n`).FindSubmatch(log)
	if m == nil {
		t.Fatalf("helper log:\n%s", log)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	if string(m[1]) != string(m[2]) || pid == os.Getpid() {
		t.Fatalf("the helper (pid %s) is not the leader of its own session (sid %s)", m[1], m[2])
	}
	if string(m[3]) != "serve --home "+home {
		t.Fatalf("helper args = %q", m[3])
	}
	// The second command finds it running.
	out.Reset()
	errOut.Reset()
	if code := run([]string{"status", "--home", home}, &out, &errOut); code != 0 || errOut.Len() != 0 || !strings.Contains(out.String(), "Backend:  fake") {
		t.Fatalf("status: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestAHelperThatCannotStartIsReported with the last line of its log; one
// whose port is taken is started again on a free port, for a data
// directory of its own, and the user is told.
func TestAHelperThatCannotStartIsReported(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'hivecrew-helper: listen on 127.0.0.1:5482: bind: address already in use' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, helperBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	home := daemontest.NewHome(t)
	var out, errOut strings.Builder
	start := time.Now()
	code := run([]string{"ls", "--home", home}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "hivecrew: the helper exited at once (exit status 1): listen on 127.0.0.1:5482: bind: address already in use") ||
		!strings.Contains(errOut.String(), "The API port is taken") {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s to report a helper that exited at once", time.Since(start))
	}

	// A helper that finds its port taken, then starts on a free one.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	real := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(real, helperBinary)); err != nil {
		t.Fatal(err)
	}
	script = "#!/bin/sh\ncase \"$*\" in *--addr*) exec " + filepath.Join(real, helperBinary) + " \"$@\";; esac\n" +
		"echo 'hivecrew-helper: listen on 127.0.0.1:5482: bind: address already in use' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, helperBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	home = daemontest.NewHome(t)
	c := client.NewUnix(config.Paths{Home: home}.Socket())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c.Shutdown(ctx) == nil {
			for c.Health(ctx) == nil && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	out.Reset()
	errOut.Reset()
	if code := run([]string{"ls", "--home", home}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "No tasks yet") ||
		!strings.Contains(errOut.String(), "The API port is taken (by another helper?): this helper takes a free one") {
		t.Fatalf("ls with the port taken: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	log, _ := os.ReadFile(filepath.Join(home, "Logs", "helper.log"))
	if !strings.Contains(string(log), "args=serve --home "+home+" --addr 127.0.0.1:0") {
		t.Fatalf("helper log:\n%s", log)
	}
}
