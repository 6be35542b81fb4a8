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

	"github.com/godbus/dbus/v5"
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
// which AT-SPI is activated) and openbox. Its processes die with the
// process that started it.
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
// accepts connections, (unless disabled) the window manager manages it and
// AT-SPI is up or has failed (accessibility is then unavailable, and said
// so when asked for).
//
// What does not depend on another step runs beside it, as a desktop's
// start is a sandbox's cold start: Xvfb and the session bus start
// together (the bus's activated services learn the display through
// UpdateActivationEnvironment once there is one), openbox as soon as
// both are up, and AT-SPI (its bus, registry and the toolkits' switch)
// is brought up on the bus while openbox starts, so that the first apps
// started are accessible and the guest's first hello finds it running.
// Readiness is each program's own notice (Xvfb's -displayfd, the bus's
// printed address, the window manager's root property change), never a
// poll.
//
// Xvfb runs without GLX: loading Mesa's software renderer for it was a
// third of a start's CPU and half an idle session's memory, and what
// guests run (Chromium, GTK, LibreOffice) renders in software without it
// (Chromium had no WebGL on this Xvfb with GLX either: it does not take
// Mesa's software renderer). A program that needs OpenGL through GLX
// does not start.
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
	xr, xw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer xr.Close()
	args := append([]string{"-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", o.Width, o.Height),
		"-nolisten", "tcp", "-noreset", "+extension", "XTEST", "-extension", "GLX"}, o.XvfbArgs...)
	xvfb := exec.Command("Xvfb", args...)
	xvfb.Env = env
	xvfb.ExtraFiles = []*os.File{xw}
	err = s.start(xvfb, func() { close(s.done) })
	xw.Close()
	if err != nil {
		return nil, fmt.Errorf("start Xvfb (is the xvfb package installed?): %w", err)
	}

	br, bw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer br.Close()
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1", "--nopidfile")
	bus.Env = env
	bus.Stdout = bw
	err = s.start(bus, nil)
	bw.Close()
	if err != nil {
		return nil, fmt.Errorf("start dbus-daemon: %w", err)
	}

	num, err := readLine(ctx, xr)
	if err != nil {
		return nil, fmt.Errorf("Xvfb did not start: %w", err)
	}
	s.Display = ":" + num
	addr, err := readLine(ctx, br)
	if err != nil {
		return nil, fmt.Errorf("dbus-daemon did not start: %w", err)
	}
	env = setEnv(setEnv(env, "DISPLAY", s.Display), "DBUS_SESSION_BUS_ADDRESS", addr)
	s.Env = env

	if !o.NoWindowManager {
		wm := exec.Command("openbox", "--sm-disable")
		// openbox takes no text input, so it needs no compose table:
		// libX11 parsing the locale's (thousands of lines) was a quarter
		// of openbox's start. Only what openbox's own menu launches
		// inherits this; the apps the agent opens get Env.
		wm.Env = setEnv(env, "XCOMPOSEFILE", os.DevNull)
		if err := s.start(wm, nil); err != nil {
			return nil, fmt.Errorf("start openbox: %w", err)
		}
	}
	a11yDone, err := s.busDisplay(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer func() { a11yDone(!ok) }()
	if !o.NoWindowManager {
		if err := waitForWM(ctx, s.Display); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// busDisplay gives the session bus's activated services the display, then
// brings AT-SPI up beside what the caller does next; done waits for that,
// ending it first if abort (the session failed). A failure there is not
// the session's: whoever asks for accessibility later is told.
func (s *Session) busDisplay(ctx context.Context, addr string) (done func(abort bool), err error) {
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("connect to the session bus: %w", err)
	}
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.UpdateActivationEnvironment", 0,
		map[string]string{"DISPLAY": s.Display}).Err; err != nil {
		conn.Close()
		return nil, fmt.Errorf("give the session bus the display: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, sessionStartTimeout)
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		defer conn.Close()
		if a11y, err := openAtspi(wctx, conn); err == nil {
			a11y.Close()
		}
	}()
	return func(abort bool) {
		if abort {
			cancel()
		}
		<-warmed
		cancel()
	}, nil
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

// waitForWM waits until an EWMH window manager manages the display: its
// root window property, watched for the change rather than polled.
func waitForWM(ctx context.Context, display string) error {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", display, err)
	}
	changed := make(chan struct{}, 1)
	reading := make(chan struct{})
	defer func() {
		conn.Close() // ends the reader below
		<-reading
	}()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	atom, err := xproto.InternAtom(conn, false, uint16(len("_NET_SUPPORTING_WM_CHECK")), "_NET_SUPPORTING_WM_CHECK").Reply()
	if err != nil {
		close(reading)
		return err
	}
	go func() {
		defer close(reading)
		for {
			ev, err := conn.WaitForEvent()
			if ev == nil && err == nil {
				return // closed
			}
			if pn, ok := ev.(xproto.PropertyNotifyEvent); ok && pn.Atom == atom.Atom {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}
	}()
	// Watched first, then read: a change between the two is seen either way.
	if err := xproto.ChangeWindowAttributesChecked(conn, root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
		return fmt.Errorf("watch the root window: %w", err)
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
		case <-changed:
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
