package linux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// SessionOptions describe a desktop session.
type SessionOptions struct {
	// Width and Height of the screen; default 1280x800.
	Width, Height int
	// NoWindowManager skips openbox.
	NoWindowManager bool
	// XvfbArgs are extra arguments for Xvfb (tests turn extensions off).
	XvfbArgs []string
	// Env is the base environment of the session's processes; nil means
	// os.Environ().
	Env []string
}

// Session is a running X desktop: Xvfb, a private D-Bus session bus (through
// which AT-SPI is activated on demand) and openbox. Its processes die with
// the process that started it.
type Session struct {
	Display string
	// Env is Options.Env plus DISPLAY and DBUS_SESSION_BUS_ADDRESS.
	Env   []string
	procs []*exec.Cmd
	done  chan struct{} // closed when Xvfb exits
}

// sessionStartTimeout bounds each step of StartSession.
const sessionStartTimeout = 15 * time.Second

// StartSession starts a desktop session and returns once the X server
// accepts connections and (unless disabled) the window manager manages it.
func StartSession(ctx context.Context, o SessionOptions) (*Session, error) {
	if o.Width == 0 {
		o.Width, o.Height = 1280, 800
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	s := &Session{done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()

	// Xvfb writes its display number to fd 3 once it accepts connections.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", o.Width, o.Height),
		"-nolisten", "tcp", "-noreset", "+extension", "XTEST"}, o.XvfbArgs...)
	xvfb := exec.Command("Xvfb", args...)
	xvfb.Env = env
	xvfb.ExtraFiles = []*os.File{w}
	err = s.start(xvfb, func() { close(s.done) })
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start Xvfb (is the xvfb package installed?): %w", err)
	}
	num, err := readLine(ctx, r)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("Xvfb did not start: %w", err)
	}
	s.Display = ":" + num
	env = setEnv(env, "DISPLAY", s.Display)

	r, w, err = os.Pipe()
	if err != nil {
		return nil, err
	}
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1", "--nopidfile")
	bus.Env = env
	bus.Stdout = w
	err = s.start(bus, nil)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}
	addr, err := readLine(ctx, r)
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon did not start: %w", err)
	}
	env = setEnv(env, "DBUS_SESSION_BUS_ADDRESS", addr)
	s.Env = env

	if !o.NoWindowManager {
		wm := exec.Command("openbox", "--sm-disable")
		wm.Env = env
		if err := s.start(wm, nil); err != nil {
			return nil, fmt.Errorf("start openbox: %w", err)
		}
		if err := waitForWM(ctx, s.Display); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// Done is closed when the X server exits (the session is over).
func (s *Session) Done() <-chan struct{} { return s.done }

// Close stops the session's processes.
func (s *Session) Close() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i].Process
		p.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range s.procs {
		for time.Now().Before(deadline) && c.Process.Signal(syscall.Signal(0)) == nil {
			time.Sleep(10 * time.Millisecond)
		}
		c.Process.Kill()
	}
}

// start starts cmd as part of the session and reaps it; onExit, if set, runs
// when it exits.
func (s *Session) start(cmd *exec.Cmd, onExit func()) error {
	// The session's processes die with the agent, even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.procs = append(s.procs, cmd)
	go func() {
		cmd.Wait()
		if onExit != nil {
			onExit()
		}
	}()
	return nil
}

// waitForWM waits until an EWMH window manager manages the display.
func waitForWM(ctx context.Context, display string) error {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", display, err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	atom, err := xproto.InternAtom(conn, false, uint16(len("_NET_SUPPORTING_WM_CHECK")), "_NET_SUPPORTING_WM_CHECK").Reply()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sessionStartTimeout)
	defer cancel()
	for {
		r, err := xproto.GetProperty(conn, false, root, atom.Atom, xproto.AtomWindow, 0, 1).Reply()
		if err == nil && len(r.Value) >= 4 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("the window manager did not start")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func readLine(ctx context.Context, f interface{ Read([]byte) (int, error) }) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := bufio.NewReader(f).ReadString('\n')
		ch <- result{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return "", r.err
		}
		return r.s, nil
	case <-time.After(sessionStartTimeout):
		return "", fmt.Errorf("no answer within %s", sessionStartTimeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// setEnv returns env with key set to value.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
