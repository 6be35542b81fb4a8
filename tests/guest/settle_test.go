package guest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// TestScreenshotsShowTheInput answers issue 17.0: a model that types and
// then looks must see what it typed. Tried as a new user: after
// keyboard_type the next screenshot was byte-identical to the one before,
// and after Return the new line was not there yet, because the capture
// ran before the application redrew. Here, in a terminal and in a GTK
// editor, every screenshot taken right after input must differ from the
// one before it and equal one taken after the screen has long been still.
// (Caret blinking is off, so a still screen is the same screen.)
func TestScreenshotsShowTheInput(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	home := filepath.Join(env.Dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".config", "gtk-3.0"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "gtk-3.0", "settings.ini"), []byte("[Settings]\ngtk-cursor-blink=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, env)
	shot := func() []byte {
		return must[protocol.ScreenshotResult](a, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: protocol.FormatPNG}).Data
	}
	check := func(app, what string, act func()) {
		t.Helper()
		before := shot()
		start := time.Now()
		act()
		after := shot()
		took := time.Since(start)
		time.Sleep(time.Second)
		still := shot()
		if bytes.Equal(after, before) {
			t.Errorf("%s: the screenshot after %s is the one from before it (%s)", app, what, took)
		}
		if !bytes.Equal(after, still) {
			t.Errorf("%s: the screenshot after %s (%s) lacks what the screen showed a second later", app, what, took)
		}
		t.Logf("%s: %s, then a settled screenshot: %s", app, what, took.Round(time.Millisecond))
	}
	typeLines := func(app string) {
		for _, line := range []string{"first line", "second line of text", "third"} {
			check(app, "typing "+line, func() { must[protocol.Empty](a, protocol.MethodKeyboardType, protocol.TypeParams{Text: line}) })
			check(app, "Return", func() { must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "return"}) })
		}
	}

	must[protocol.Empty](a, protocol.MethodOpenApp, protocol.OpenAppParams{Name: "xterm"})
	time.Sleep(time.Second)
	typeLines("xterm")

	if err := os.WriteFile(filepath.Join(a.shared, "draft.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	must[protocol.Empty](a, protocol.MethodOpenFile, protocol.OpenFileParams{Path: "draft.txt", App: "mousepad"})
	time.Sleep(time.Second)
	typeLines("mousepad")
}
