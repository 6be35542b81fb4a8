package guest

import (
	"bytes"
	"image"
	"image/draw"
	_ "image/jpeg" // the live view's frames
	_ "image/png"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	xdraw "golang.org/x/image/draw"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestScaledScreenshotsFollowTheScreen: the agent's screenshots at 1024
// pixels wide (the default) rescale only the rows X drew on since their
// last one, and the live view's JPEGs reuse the bands that did not
// change. With windows opened and closed between them, and screenshots of
// the other kinds taken in between, each scaled PNG equals the full-size
// screen scaled bilinearly (within 2 levels), and each JPEG shows the
// window drawn last.
func TestScaledScreenshotsFollowTheScreen(t *testing.T) {
	env := xenv.Start(t, xenv.Options{NoWM: true})
	a := startAgent(t, env)
	conn, err := xgb.NewConnDisplay(env.Display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drawn := func() {
		xproto.GetInputFocus(conn).Reply()
		time.Sleep(100 * time.Millisecond)
	}
	shot := func(p protocol.ScreenshotParams) image.Image {
		t.Helper()
		s := must[protocol.ScreenshotResult](a, protocol.MethodScreenshot, p)
		img, _, err := image.Decode(bytes.NewReader(s.Data))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	// scaled takes the agent's screenshot, then a full-size one of the
	// same still screen, and compares.
	scaled := func(what string) {
		t.Helper()
		got := shot(protocol.ScreenshotParams{Format: protocol.FormatPNG, MaxWidth: 1024, MaxHeight: 768})
		full := image.NewRGBA(image.Rect(0, 0, 1280, 800))
		draw.Draw(full, full.Rect, shot(protocol.ScreenshotParams{Format: protocol.FormatPNG}), image.Point{}, draw.Src)
		want := image.NewRGBA(image.Rect(0, 0, 1024, 640))
		xdraw.ApproxBiLinear.Scale(want, want.Rect, full, full.Rect, xdraw.Src, nil)
		if got.Bounds() != want.Rect {
			t.Fatalf("%s: %v, want %v", what, got.Bounds(), want.Rect)
		}
		for y := range 640 {
			for x := range 1024 {
				r, g, b, _ := got.At(x, y).RGBA()
				q := want.RGBAAt(x, y)
				if far(r>>8, q.R, 2) || far(g>>8, q.G, 2) || far(b>>8, q.B, 2) {
					t.Fatalf("%s: pixel (%d, %d) is %d,%d,%d, the screen scaled %v", what, x, y, r>>8, g>>8, b>>8, q)
				}
			}
		}
	}
	// live takes a live-view JPEG 480 wide, or full size, and checks the
	// middle of a window painted in rgb at (x, y) on the screen.
	live := func(what string, width, x, y int, rgb uint32) {
		t.Helper()
		img := shot(protocol.ScreenshotParams{Format: protocol.FormatJPEG, MaxWidth: width, MaxHeight: width, Quality: 90})
		k := float64(img.Bounds().Dx()) / 1280
		r, g, b, _ := img.At(int(float64(x)*k), int(float64(y)*k)).RGBA()
		if far(r>>8, uint8(rgb>>16), 12) || far(g>>8, uint8(rgb>>8), 12) || far(b>>8, uint8(rgb), 12) {
			t.Fatalf("%s: the JPEG %d wide shows %d,%d,%d at the window, want #%06x", what, img.Bounds().Dx(), r>>8, g>>8, b>>8, rgb)
		}
	}

	paint(t, conn, 100, 100, 400, 200, 0xc03020)
	drawn()
	scaled("first")
	w := paint(t, conn, 300, 250, 300, 60, 0x20a0e0)
	drawn()
	live("a window opened", 480, 450, 280, 0x20a0e0)
	paint(t, conn, 800, 500, 120, 120, 0x30c040)
	drawn()
	scaled("one window opened before a live frame, one after")
	live("full size", 1280, 860, 560, 0x30c040)
	xproto.DestroyWindow(conn, w)
	drawn()
	live("a window closed", 480, 450, 280, 0xc03020)
	paint(t, conn, 1000, 20, 200, 40, 0xe0e040)
	drawn()
	live("full size, after a scaled one", 1280, 1100, 40, 0xe0e040)
	scaled("a window closed and one opened between live frames")
	scaled("nothing changed")
}

// far reports whether the 16-bit-derived channel v is more than d
// levels from want.
func far(v uint32, want uint8, d int) bool {
	return int(v)-int(want) > d || int(want)-int(v) > d
}
