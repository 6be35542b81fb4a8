package linux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
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

	// The accessibility start (see Warm): busAddr is the session bus,
	// noATSPI why AT-SPI cannot be started on it (nil: it can be).
	busAddr string
	noATSPI error
	// warmOnce begins the start (or, from Close, settles that there is
	// none); warmed is closed when it has ended, with warmErr.
	warmOnce sync.Once
	warmed   chan struct{}
	warmErr  error
	stopWarm context.CancelFunc
	warmCtx  context.Context
}

// sessionStartTimeout bounds each step of StartSession.
const sessionStartTimeout = 15 * time.Second

// StartSession starts a desktop session and returns once the X server
// accepts connections and (unless disabled) the window manager manages
// it. AT-SPI is started by Warm, after that: see there.
//
// What does not depend on another step runs beside it, as a desktop's
// start is a sandbox's cold start: Xvfb and the session bus start
// together (the bus's activated services learn the display through
// UpdateActivationEnvironment once there is one), and openbox as soon as
// both are up. Readiness is each program's own notice (Xvfb's
// -displayfd, the bus's printed address, the window manager's root
// property change), never a poll.
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
	s := &Session{done: make(chan struct{}), warmed: make(chan struct{})}
	s.warmCtx, s.stopWarm = context.WithCancel(context.Background())
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
	s.busAddr = addr
	if err := s.busDisplay(ctx); err != nil {
		return nil, err
	}
	if !o.NoWindowManager {
		if err := waitForWM(ctx, s.Display); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// busDisplay gives the session bus's activated services the display
// (before any is activated: AT-SPI's bus launcher names its bus on the
// display it is given) and notes whether AT-SPI can be started on it.
func (s *Session) busDisplay(ctx context.Context) error {
	conn, err := dbus.Connect(s.busAddr, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the session bus: %w", err)
	}
	defer conn.Close()
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.UpdateActivationEnvironment", 0,
		map[string]string{"DISPLAY": s.Display}).Err; err != nil {
		return fmt.Errorf("give the session bus the display: %w", err)
	}
	var names []string
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil {
		return fmt.Errorf("list the session bus's services: %w", err)
	}
	if !slices.Contains(names, atspiBusName) {
		s.noATSPI = errNoATSPI
	}
	return nil
}

// Warm starts AT-SPI (its bus, registry and the toolkits' switch) once,
// and waits until it is up or has failed (accessibility is then
// unavailable, and said so when asked for), or ctx ends. The guest agent
// calls it as it answers its first hello, and before every request
// that starts or drives programs or reads the accessibility tree: what
// they start is accessible, while the start itself is off the cold start
// (it took a quarter of a sandbox's start, its CPU shared with the
// window manager's) and overlaps the host's first look at the screen.
func (s *Session) Warm(ctx context.Context) error {
	s.warmOnce.Do(func() { go s.warm() })
	select {
	case <-s.warmed:
		return s.warmErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) warm() {
	defer close(s.warmed)
	if s.warmErr = s.noATSPI; s.warmErr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.warmCtx, sessionStartTimeout)
	defer cancel()
	conn, err := dbus.Connect(s.busAddr, dbus.WithContext(ctx))
	if err != nil {
		s.warmErr = fmt.Errorf("connect to the session bus: %w", err)
		return
	}
	defer conn.Close()
	a11y, err := openAtspi(ctx, conn)
	if err != nil {
		s.warmErr = err
		return
	}
	a11y.Close()
}

// Accessibility says, without waiting, why the session has no
// accessibility: nil while AT-SPI is up or can still come up (Warm).
func (s *Session) Accessibility() error {
	select {
	case <-s.warmed:
		return s.warmErr
	default:
		return s.noATSPI
	}
}

var errNoATSPI = errors.New("no AT-SPI bus on the session bus (is at-spi2-core installed?)")

// Done is closed when the X server exits (the session is over).
func (s *Session) Done() <-chan struct{} { return s.done }

// Close stops the session's processes.
func (s *Session) Close() {
	s.warmOnce.Do(func() {
		s.warmErr = errors.New("the desktop session is closed")
		close(s.warmed)
	})
	s.stopWarm()
	<-s.warmed
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
