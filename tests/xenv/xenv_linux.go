package xenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/linux"
)

// Options configure Start.
type Options struct {
	Width, Height int  // default 1280x800
	NoWM          bool // no window manager
	XvfbArgs      []string
	// Cold hands the desktop over without AT-SPI started (Session.Warm
	// starts it), as the guest agent's first hello finds it; otherwise it
	// is up, as the agent's actions find it.
	Cold bool
}

// T is the part of testing.TB the desktop needs (the benchmark provides its own).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Env is a running desktop.
type Env struct {
	Display string
	// Vars are the environment variables a client of this desktop needs.
	Vars []string
	// Dir is a private folder (HOME and XDG_RUNTIME_DIR live under it).
	Dir string
	// Session is the desktop session.
	Session *linux.Session
	pgid    int
	t       T
}

// Start starts a desktop and stops it when the test ends.
func Start(t T, o Options) *Env {
	t.Helper()
	dir, err := os.MkdirTemp("", "xenv")
	if err != nil {
		t.Fatalf("%v", err)
	}
	e := &Env{Dir: dir, t: t}
	t.Cleanup(func() { os.RemoveAll(dir) })
	runtime, home := filepath.Join(dir, "run"), filepath.Join(dir, "home")
	for _, d := range []string{runtime, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("%v", err)
		}
	}
	base := []string{
		"HOME=" + home, "XDG_RUNTIME_DIR=" + runtime, "XDG_DATA_DIRS=/usr/local/share:/usr/share",
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
	}
	s, err := linux.StartSession(context.Background(), linux.SessionOptions{Width: o.Width, Height: o.Height, NoWindowManager: o.NoWM, XvfbArgs: o.XvfbArgs, Env: base})
	if err != nil {
		t.Fatalf("start the desktop: %v", err)
	}
	t.Cleanup(s.Close)
	t.Cleanup(e.killClients)
	if !o.Cold {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Warm(ctx); err != nil {
			t.Fatalf("start AT-SPI on the desktop: %v", err)
		}
	}
	e.Display, e.Vars, e.Session = s.Display, s.Env, s
	return e
}

// Command returns a command that runs on this desktop.
func (e *Env) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = e.Vars
	return cmd
}

// Start starts cmd in the desktop's client process group; it is killed at cleanup.
func (e *Env) Start(cmd *exec.Cmd) {
	e.t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: e.pgid}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start %s: %v", cmd.Path, err)
	}
	if e.pgid == 0 {
		e.pgid = cmd.Process.Pid
	}
	go cmd.Wait()
}

// WaitFor polls ok until it holds, failing the test after timeout.
func (e *Env) WaitFor(timeout time.Duration, what string, ok func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *Env) killClients() {
	if e.pgid != 0 {
		syscall.Kill(-e.pgid, syscall.SIGKILL)
	}
}
