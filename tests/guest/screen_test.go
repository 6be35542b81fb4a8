package guest

import (
	"bytes"
	"crypto/hmac"
	"image"
	"image/color"
	_ "image/jpeg"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// paint opens an undecorated X window of a solid colour at a position, as an
// independent X client, and returns it.
func paint(t *testing.T, conn *xgb.Conn, x, y, w, h int16, rgb uint32) xproto.Window {
	t.Helper()
	scr := xproto.Setup(conn).DefaultScreen(conn)
	id, err := xproto.NewWindowId(conn)
	if err != nil {
		t.Fatal(err)
	}
	err = xproto.CreateWindowChecked(conn, scr.RootDepth, id, scr.Root, x, y, uint16(w), uint16(h), 0,
		xproto.WindowClassInputOutput, scr.RootVisual,
		xproto.CwBackPixel|xproto.CwOverrideRedirect, []uint32{rgb, 1}).Check()
	if err != nil {
		t.Fatal(err)
	}
	if err := xproto.MapWindowChecked(conn, id).Check(); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestScreenshotColoursAndSizes: windows drawn in known colours appear at
// their coordinates, also in the next screenshot after the screen changed;
// JPEG and downscaled variants report the sizes they have. The agent reads
// the screen through shared memory (MIT-SHM), or through the X socket
// when the X server has no MIT-SHM.
func TestScreenshotColoursAndSizes(t *testing.T) {
	t.Run("shared memory", func(t *testing.T) {
		a := screenshotColoursAndSizes(t, xenv.Options{NoWM: true})
		if log := a.log(); strings.Contains(log, "through the X socket") || strings.Contains(log, "read the whole screen each time") {
			t.Errorf("the agent did not use shared memory and damage on Xvfb:\n%s", log)
		}
	})
	t.Run("shared memory without DAMAGE", func(t *testing.T) {
		a := screenshotColoursAndSizes(t, xenv.Options{NoWM: true, XvfbArgs: []string{"-extension", "DAMAGE"}})
		if log := a.log(); !strings.Contains(log, "screenshots read the whole screen each time") {
			t.Errorf("the agent did not say it reads the whole screen:\n%s", log)
		}
	})
	t.Run("X socket", func(t *testing.T) {
		a := screenshotColoursAndSizes(t, xenv.Options{NoWM: true, XvfbArgs: []string{"-extension", "MIT-SHM"}})
		if log := a.log(); !strings.Contains(log, "screenshots go through the X socket") {
			t.Errorf("the agent did not say it reads the screen through the socket:\n%s", log)
		}
	})
}

func screenshotColoursAndSizes(t *testing.T, o xenv.Options) *agent {
	env := xenv.Start(t, o)
	a := startAgent(t, env)
	conn, err := xgb.NewConnDisplay(env.Display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	paint(t, conn, 100, 100, 200, 100, 0xff0000) // red
	paint(t, conn, 700, 300, 150, 150, 0x00ff00) // green
	paint(t, conn, 1200, 700, 80, 100, 0x0000ff) // blue, in the corner
	paint(t, conn, 0, 0, 1, 1, 0xffff00)         // one yellow pixel at the origin
	xproto.GetInputFocus(conn).Reply()
	time.Sleep(100 * time.Millisecond)

	red, green, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{0, 0, 255, 255}
	black, white := color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}
	want := map[image.Point]color.RGBA{
		{100, 100}: red, {299, 199}: red,
		{300, 200}:  black, // just outside: the black root
		{775, 375}:  green,
		{1279, 799}: blue,
		{0, 0}:      {255, 255, 0, 255}, {1, 0}: black,
	}
	checkPNG(t, a, want)
	// A white window over part of the red one and the black root: the next
	// screenshot shows it and nothing else changed.
	drawn := func() {
		xproto.GetInputFocus(conn).Reply()
		time.Sleep(100 * time.Millisecond)
	}
	white1 := paint(t, conn, 250, 150, 100, 20, 0xffffff)
	drawn()
	want[image.Point{299, 169}], want[image.Point{349, 150}], want[image.Point{250, 150}] = white, white, white
	want[image.Point{299, 170}], want[image.Point{350, 150}] = red, black
	checkPNG(t, a, want)
	// A change seen first by a JPEG screenshot (the live view's) is in the
	// next PNG too; so is what a closed window uncovers.
	paint(t, conn, 600, 700, 30, 30, 0xff00ff)
	drawn()
	must[protocol.ScreenshotResult](a, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: "jpeg", MaxWidth: 320})
	want[image.Point{615, 715}] = color.RGBA{255, 0, 255, 255}
	checkPNG(t, a, want)
	xproto.DestroyWindow(conn, white1)
	drawn()
	want[image.Point{299, 169}], want[image.Point{349, 150}], want[image.Point{250, 150}] = red, black, red
	checkPNG(t, a, want)
	checkPNG(t, a, want) // and with nothing changed since

	for _, c := range []struct {
		p      protocol.ScreenshotParams
		w, h   int
		format string
	}{
		{protocol.ScreenshotParams{Format: "jpeg", Quality: 85}, 1280, 800, "jpeg"},
		{protocol.ScreenshotParams{Format: "png", MaxWidth: 640}, 640, 400, "png"},
		{protocol.ScreenshotParams{Format: "jpeg", MaxWidth: 1000, MaxHeight: 500}, 800, 500, "jpeg"},
	} {
		s := must[protocol.ScreenshotResult](a, protocol.MethodScreenshot, c.p)
		cfg, format, err := image.DecodeConfig(bytes.NewReader(s.Data))
		if err != nil {
			t.Fatal(err)
		}
		if s.Width != c.w || s.Height != c.h || cfg.Width != c.w || cfg.Height != c.h || format != c.format {
			t.Errorf("%+v: reported %dx%d, image %dx%d %s; want %dx%d %s", c.p, s.Width, s.Height, cfg.Width, cfg.Height, format, c.w, c.h, c.format)
		}
		if c.format == "jpeg" && c.w == 800 {
			img, _, _ := image.Decode(bytes.NewReader(s.Data))
			// The red window (100..300 x 100..200) scaled by 0.625: (62..187, 62..125).
			r, g, b, _ := img.At(125, 94).RGBA()
			if r>>8 < 200 || g>>8 > 60 || b>>8 > 60 {
				t.Errorf("downscaled JPEG pixel (125, 94) = %d,%d,%d, want red", r>>8, g>>8, b>>8)
			}
		}
	}

	p := helloParams()
	hello := must[protocol.HelloResult](a, protocol.MethodHello, p)
	if !hmac.Equal(hello.Proof, protocol.HelloProof(agentKey, p.Challenge)) {
		t.Errorf("hello's proof does not prove the enrolled key")
	}
	if hello.Screen != (protocol.Screen{Width: 1280, Height: 800, Scale: 1}) || hello.OS != "linux" {
		t.Errorf("hello = %+v", hello)
	}
	return a
}

// checkPNG takes a full-size PNG screenshot and checks the given pixels.
func checkPNG(t *testing.T, a *agent, want map[image.Point]color.RGBA) {
	t.Helper()
	shot := must[protocol.ScreenshotResult](a, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: "png"})
	if shot.Width != 1280 || shot.Height != 800 {
		t.Fatalf("screenshot is %dx%d, want 1280x800", shot.Width, shot.Height)
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range want {
		r, g, b, _ := img.At(p.X, p.Y).RGBA()
		if got := (color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}); got != c {
			t.Errorf("pixel %v = %v, want %v", p, got, c)
		}
	}
	if t.Failed() {
		os.WriteFile("/tmp/hivecrew-screenshot-test.png", shot.Data, 0o644)
	}
}
