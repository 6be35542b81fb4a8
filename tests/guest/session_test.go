package guest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestSessionIsReadyWhenStarted: a desktop session is handed over with
// its window manager managing it and AT-SPI not yet started (the guest
// agent's first hello does not wait for it); Warm starts it with the
// display (its bus launcher names the accessibility bus on the root
// window, which toolkits read), although the session bus was started
// before the display existed; and the X server offers no GLX (see
// StartSession).
func TestSessionIsReadyWhenStarted(t *testing.T) {
	env := xenv.Start(t, xenv.Options{Cold: true})
	conn, err := xgb.NewConnDisplay(env.Display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	prop := func(name string) []byte {
		a, err := xproto.InternAtom(conn, true, uint16(len(name)), name).Reply()
		if err != nil || a.Atom == xproto.AtomNone {
			return nil
		}
		r, err := xproto.GetProperty(conn, false, root, a.Atom, xproto.GetPropertyTypeAny, 0, 256).Reply()
		if err != nil {
			t.Fatal(err)
		}
		return r.Value
	}
	if len(prop("_NET_SUPPORTING_WM_CHECK")) < 4 {
		t.Error("no window manager manages the display when the session is handed over")
	}
	if bus := prop("AT_SPI_BUS"); bus != nil {
		t.Errorf("the root window's AT_SPI_BUS is %q when the session is handed over: AT-SPI was started before the first hello", bus)
	}
	if err := env.Session.Accessibility(); err != nil {
		t.Errorf("accessibility before AT-SPI is started = %v, want nil (it can be started)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.Session.Warm(ctx); err != nil {
		t.Fatalf("Warm: %v", err)
	}
	if bus := string(prop("AT_SPI_BUS")); !strings.HasPrefix(bus, "unix:") {
		t.Errorf("the root window's AT_SPI_BUS is %q once warm: AT-SPI is not up or did not get the display", bus)
	}
	if err := env.Session.Accessibility(); err != nil {
		t.Errorf("accessibility once warm = %v, want nil", err)
	}
	ext, err := xproto.QueryExtension(conn, uint16(len("GLX")), "GLX").Reply()
	if err != nil {
		t.Fatal(err)
	}
	if ext.Present {
		t.Error("the X server offers GLX; sessions start it without")
	}
}
