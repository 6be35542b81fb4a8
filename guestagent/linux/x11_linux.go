package linux

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
	"github.com/hivecrew/hivecrew/guestagent/settle"
)

// Config configures the driver. Log is required.
type Config struct {
	// Display is the X display (":1"); empty means $DISPLAY.
	Display string
	// PowerOff is the command the shutdown method runs; empty means none
	// (a sandbox ends when the agent exits).
	PowerOff []string
	Log      *slog.Logger
	// Session is the desktop session of the display, if the agent
	// started it: the driver warms its AT-SPI (server.Warmer), and
	// Describe reports its accessibility without waiting. Nil: AT-SPI is
	// the display's own, and Describe connects to it.
	Session *Session
}

// Driver is the X11 driver. It is safe for concurrent use.
type Driver struct {
	log  *slog.Logger
	conn *xgb.Conn
	root xproto.Window
	// red, green, blue give the byte offsets of each channel in a 32-bit pixel.
	red, green, blue int

	// shm reads the screen through shared memory; nil when the X server
	// cannot (then screenshots come through the socket).
	shm   *shmScreen
	kb    *keyboard
	clip  *clipboard
	atoms *atoms
	a11y  *accessibility
	// settle makes captures after input wait for the screen to settle;
	// damage tells it of redraws (nil without DAMAGE).
	settle *settle.Settler
	damage *damageSource

	// session is Config.Session.
	session *Session

	osVersion string
	powerOff  []string

	// mu guards width and height, which the event loop updates when the
	// screen is resized.
	mu            sync.Mutex
	width, height int

	loopDone chan struct{}
}

var _ server.Driver = (*Driver)(nil)
var _ server.Speculator = (*Driver)(nil)

// New connects to the X display and prepares input, clipboard and
// accessibility. The driver owns the connection until Close.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	if cfg.Log == nil {
		return nil, errors.New("linux driver: Log is required")
	}
	display := cfg.Display
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	if display == "" {
		return nil, errors.New("no X display: set DISPLAY or pass --display")
	}
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("connect to X display %s: %w", display, err)
	}
	d := &Driver{log: cfg.Log, conn: conn, powerOff: cfg.PowerOff, loopDone: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	if err := xtest.Init(conn); err != nil {
		return nil, fmt.Errorf("X display %s has no XTEST extension: %w", display, err)
	}
	setup := xproto.Setup(conn)
	scr := setup.DefaultScreen(conn)
	d.root = scr.Root
	d.width, d.height = int(scr.WidthInPixels), int(scr.HeightInPixels)
	if err := d.pixelLayout(setup, scr); err != nil {
		return nil, err
	}
	// Hear about screen resizes.
	if err := xproto.ChangeWindowAttributesChecked(conn, d.root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskStructureNotify}).Check(); err != nil {
		return nil, fmt.Errorf("watch the root window: %w", err)
	}
	d.atoms = newAtoms(conn)
	if d.kb, err = newKeyboard(conn, setup, d.root); err != nil {
		return nil, err
	}
	if d.clip, err = newClipboard(conn, scr, d.atoms); err != nil {
		return nil, err
	}
	if d.shm, err = newSHMScreen(conn, d.root, d.width*d.height*4, cfg.Log); err != nil {
		cfg.Log.Info("screenshots go through the X socket", "reason", err)
	}
	var frames settle.FrameSource
	if d.damage, err = newDamageSource(conn, d.root); err != nil {
		cfg.Log.Info("captures after input wait a fixed time", "reason", err)
	} else {
		frames = d.damage
	}
	d.settle = settle.New(settle.Config{Source: frames, Log: cfg.Log})
	d.a11y = newAccessibility(cfg.Log)
	d.session = cfg.Session
	d.osVersion = osVersion()
	ok = true
	go d.eventLoop()
	return d, nil
}

// Close releases the keycodes the driver remapped and the connection.
func (d *Driver) Close() error {
	d.kb.restore()
	d.a11y.close()
	d.settle.Close()
	d.damage.close()
	if d.shm != nil {
		d.shm.close()
	}
	d.conn.Close()
	<-d.loopDone
	return nil
}

// pixelLayout finds where red, green and blue sit in a pixel of the root
// visual; only 24/32-bit TrueColor displays are supported.
func (d *Driver) pixelLayout(setup *xproto.SetupInfo, scr *xproto.ScreenInfo) error {
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == scr.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if bpp != 32 || setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		return fmt.Errorf("unsupported X display: depth %d at %d bits per pixel (need a 24-bit TrueColor display, e.g. Xvfb -screen 0 1280x800x24)", scr.RootDepth, bpp)
	}
	for _, depth := range scr.AllowedDepths {
		for _, v := range depth.Visuals {
			if v.VisualId != scr.RootVisual {
				continue
			}
			offset := func(mask uint32) int {
				switch mask {
				case 0xff:
					return 0
				case 0xff00:
					return 1
				case 0xff0000:
					return 2
				case 0xff000000:
					return 3
				}
				return -1
			}
			d.red, d.green, d.blue = offset(v.RedMask), offset(v.GreenMask), offset(v.BlueMask)
			if d.red < 0 || d.green < 0 || d.blue < 0 {
				return fmt.Errorf("unsupported X visual masks %#x/%#x/%#x", v.RedMask, v.GreenMask, v.BlueMask)
			}
			return nil
		}
	}
	return errors.New("root visual not found in the X setup")
}

// eventLoop dispatches X events until the connection closes.
func (d *Driver) eventLoop() {
	defer close(d.loopDone)
	for {
		ev, xerr := d.conn.WaitForEvent()
		if ev == nil && xerr == nil {
			return
		}
		if xerr != nil {
			d.log.Debug("X error", "err", xerr)
			continue
		}
		switch e := ev.(type) {
		case xproto.ConfigureNotifyEvent:
			if e.Window == d.root {
				d.mu.Lock()
				d.width, d.height = int(e.Width), int(e.Height)
				d.mu.Unlock()
			}
		case xproto.MappingNotifyEvent:
			d.kb.invalidate()
		case xproto.SelectionRequestEvent:
			d.clip.serve(e)
		case xproto.SelectionClearEvent:
			d.clip.lost(e)
		case xproto.SelectionNotifyEvent:
			d.clip.notified(e)
		case xproto.PropertyNotifyEvent:
			d.clip.propertyChanged(e)
		case damage.NotifyEvent:
			d.damage.event(e)
		}
	}
}

func (d *Driver) size() (int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.width, d.height
}

// Screen implements server.Driver.
func (d *Driver) Screen() protocol.Screen {
	w, h := d.size()
	return protocol.Screen{Width: w, Height: h, Scale: 1}
}

// Describe implements server.Driver.
func (d *Driver) Describe(ctx context.Context) (server.Description, error) {
	desc := server.Description{
		OS: "linux", OSVersion: d.osVersion,
		Screen:       d.Screen(),
		Capabilities: []string{protocol.CapScreenshot, protocol.CapInput, protocol.CapInputV2, protocol.CapClipboard, protocol.CapApps},
		// Linux has no per-app permission for screen capture or input.
		Permissions: protocol.Permissions{ScreenRecording: true, Accessibility: true},
	}
	if err := d.accessible(ctx); err != nil {
		desc.Problems = append(desc.Problems, "accessibility: "+err.Error())
	} else {
		desc.Capabilities = append(desc.Capabilities, protocol.CapAccessibility)
	}
	return desc, nil
}

// accessible says why the display has no accessibility, if it has none.
func (d *Driver) accessible(ctx context.Context) error {
	if d.session != nil {
		return d.session.Accessibility()
	}
	return d.a11y.available(ctx)
}

// Warm implements server.Warmer: it starts the session's AT-SPI and
// waits for it (nothing to do on a display the driver did not start).
func (d *Driver) Warm(ctx context.Context) error {
	if d.session == nil {
		return nil
	}
	return d.session.Warm(ctx)
}

// Capture implements server.Driver: the root window at native size, as a
// frame in the display's own pixel layout, read in place from shared
// memory where the X server offers it (then the frame must be released).
//
// After input it first waits for the applications to draw its effect
// (settle.Settler.Wait): the model's next screenshot shows what its
// action did.
func (d *Driver) Capture(ctx context.Context) (image.Image, error) {
	if waited := d.settle.Wait(ctx); waited > 0 {
		d.log.Debug("the screen settled after input", "waited", waited)
	}
	return d.CaptureNow(ctx)
}

// Settler implements server.Speculator: the state Capture waits on.
func (d *Driver) Settler() *settle.Settler { return d.settle }

// CaptureNow implements server.Speculator: Capture without the wait.
func (d *Driver) CaptureNow(ctx context.Context) (image.Image, error) {
	w, h := d.size()
	f := &frame.Frame{Stride: 4 * w, Width: w, Height: h, R: d.red, G: d.green, B: d.blue}
	if d.shm != nil {
		pix, seq, changes, release, err := d.shm.capture(w, h)
		if err != nil {
			return nil, protocol.Errorf(protocol.CodeUnavailable, "capture the screen: %v", err)
		}
		f.Pix, f.Seq, f.Changes, f.Release = pix, seq, changes, release
		return f, nil
	}
	reply, err := xproto.GetImage(d.conn, xproto.ImageFormatZPixmap, xproto.Drawable(d.root),
		0, 0, uint16(w), uint16(h), 0xffffffff).Reply()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "capture the screen: %v", err)
	}
	f.Pix = reply.Data
	if err := f.Check(); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternalError, "screen image: %v", err)
	}
	return f, nil
}

// posted waits until the X server has processed the input just posted
// and notes it for the next capture.
func (d *Driver) posted() error { return d.postedAs(d.settle.Input) }

// postedText is posted for text typed from sent on, which draws: the
// next capture waits for its first redraw (settle.Settler.InputDrawing).
func (d *Driver) postedText(sent time.Time) error {
	return d.postedAs(func() { d.settle.InputDrawing(sent) })
}

func (d *Driver) postedAs(note func()) error {
	if err := d.sync(); err != nil {
		return err
	}
	note()
	return nil
}

// sync waits until the X server has processed every request sent so far.
func (d *Driver) sync() error {
	if _, err := xproto.GetInputFocus(d.conn).Reply(); err != nil {
		return protocol.Errorf(protocol.CodeUnavailable, "X server: %v", err)
	}
	return nil
}

func osVersion() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}
