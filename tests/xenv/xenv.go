// Package xenv starts a real X desktop for end-to-end tests: Xvfb (the
// display number chosen by Xvfb through -displayfd), an EWMH window manager
// (openbox) and a private D-Bus session in which AT-SPI is activated on
// demand. Every process runs in one process group, killed at cleanup.
package xenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options configure Start.
type Options struct {
	Width, Height int  // default 1280x800
	NoWM          bool // no window manager
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
	// Dir is a private folder (HOME, XDG_RUNTIME_DIR live under it).
	Dir  string
	pgid int
	t    T
}

// Start starts a desktop and stops it when the test ends.
func Start(t T, o Options) *Env {
	t.Helper()
	if o.Width == 0 {
		o.Width, o.Height = 1280, 800
	}
	dir, err := os.MkdirTemp("", "xenv")
	if err != nil {
		t.Fatalf("%v", err)
	}
	e := &Env{Dir: dir, t: t}
	runtime := filepath.Join(dir, "run")
	home := filepath.Join(dir, "home")
	for _, d := range []string{runtime, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("%v", err)
		}
	}
	t.Cleanup(e.stop)

	// Xvfb writes its display number to fd 3 once it accepts connections.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	xvfb := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", o.Width, o.Height),
		"-nolisten", "tcp", "-noreset", "+extension", "XTEST")
	xvfb.ExtraFiles = []*os.File{w}
	e.start(xvfb)
	w.Close()
	num, err := readLine(r, 10*time.Second)
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb did not start: %v", err)
	}
	e.Display = ":" + num
	e.Vars = []string{
		"DISPLAY=" + e.Display, "HOME=" + home, "XDG_RUNTIME_DIR=" + runtime,
		"XDG_DATA_DIRS=/usr/local/share:/usr/share", "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
		"GTK_A11Y=atspi", "NO_AT_BRIDGE=0",
	}

	// A private session bus; AT-SPI's bus launcher is activated through it.
	dbus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1", "--nopidfile")
	dbus.Env = e.Vars
	out, err := dbus.StdoutPipe()
	if err != nil {
		t.Fatalf("%v", err)
	}
	e.start(dbus)
	addr, err := readLine(out, 10*time.Second)
	if err != nil {
		t.Fatalf("dbus-daemon did not start: %v", err)
	}
	e.Vars = append(e.Vars, "DBUS_SESSION_BUS_ADDRESS="+addr)

	if !o.NoWM {
		wm := e.Command("openbox", "--sm-disable")
		e.start(wm)
		e.waitFor(func() bool {
			out, _ := e.Command("xprop", "-root", "_NET_SUPPORTING_WM_CHECK").Output()
			return strings.Contains(string(out), "window id")
		}, "openbox to manage the display")
	}
	return e
}

// Command returns a command that runs on this desktop, in its process group.
func (e *Env) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = e.Vars
	return cmd
}

// Start starts cmd in the desktop's process group; it is killed at cleanup.
func (e *Env) Start(cmd *exec.Cmd) {
	e.t.Helper()
	e.start(cmd)
}

func (e *Env) start(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: e.pgid}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start %s: %v", cmd.Path, err)
	}
	if e.pgid == 0 {
		e.pgid = cmd.Process.Pid
	}
	go cmd.Wait()
}

func (e *Env) waitFor(ok func() bool, what string) {
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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

func (e *Env) stop() {
	if e.pgid != 0 {
		syscall.Kill(-e.pgid, syscall.SIGKILL)
	}
	os.RemoveAll(e.Dir)
}

func readLine(f interface{ Read([]byte) (int, error) }, timeout time.Duration) (string, error) {
	ch := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		s, err := bufio.NewReader(f).ReadString('\n')
		if err != nil {
			errc <- err
			return
		}
		ch <- strings.TrimSpace(s)
	}()
	select {
	case s := <-ch:
		return s, nil
	case err := <-errc:
		return "", err
	case <-time.After(timeout):
		return "", fmt.Errorf("no output within %s", timeout)
	}
}
