package guest

import (
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

const unicodeText = "Hello, wörld! ✓ 日本"

// TestTypingAndAccessibility: the accessibility tree of a GTK app holds its
// text entry and its button with frames that, clicked, hit them; text with
// characters the keymap lacks is typed exactly; the clipboard round-trips.
func TestTypingAndAccessibility(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "form")

	entry := messageEntry(t, a)
	button := waitNode(t, a, "push button Press me", func(n protocol.Node) bool {
		return n.Role == "push button" && n.Name == "Press me"
	})
	if entry.Frame.W <= 0 || button.Frame.W <= 0 {
		t.Fatalf("frames: entry %+v, button %+v", entry.Frame, button.Frame)
	}
	// maxDepth bounds the tree: applications and their windows only.
	shallow := must[protocol.AccessibilityResult](a, protocol.MethodAccessibilityTree, protocol.AccessibilityParams{App: "hivecrew-testapp", MaxDepth: 2})
	if len(shallow.Nodes) != 1 || shallow.Nodes[0].Role != "application" || len(shallow.Nodes[0].Children) == 0 {
		t.Fatalf("maxDepth 2 tree = %+v", shallow.Nodes)
	}
	for _, win := range shallow.Nodes[0].Children {
		if len(win.Children) > 0 {
			t.Fatalf("maxDepth 2 returned grandchildren: %+v", win)
		}
	}
	if _, err := call[protocol.AccessibilityResult](a, protocol.MethodAccessibilityTree, protocol.AccessibilityParams{App: "no-such-app"}); codeOf(err) != protocol.CodeNotFound {
		t.Errorf("tree of an unknown app = %v, want not found", err)
	}

	// Click the entry at the centre of its accessible frame and type.
	x, y := center(entry)
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: x, Y: y})
	must[protocol.Empty](a, protocol.MethodKeyboardType, protocol.TypeParams{Text: unicodeText})
	app.wait(5*time.Second, "the typed text in the entry", func(e event) bool {
		return e.Event == "changed" && e.Text == unicodeText
	})
	// The same text, read back through the accessibility tree.
	got := waitNode(t, a, "the entry with the text", func(n protocol.Node) bool {
		return n.Role == "text" && n.Name == "Message" && n.Value != nil && *n.Value == unicodeText
	})
	if got.ID != entry.ID {
		t.Errorf("entry id changed from %s to %s", entry.ID, got.ID)
	}

	// Select all and copy: the clipboard holds the text (read from GTK's selection).
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "a", Modifiers: []string{"control"}})
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "c", Modifiers: []string{"control"}})
	var clip protocol.ClipboardText
	env.WaitFor(5*time.Second, "the copied text on the clipboard", func() bool {
		clip, _ = call[protocol.ClipboardText](a, protocol.MethodClipboardRead, nil)
		return clip.Text == unicodeText
	})

	// Write the clipboard from the agent and paste it into the app: the agent
	// keeps the selection and serves the paste.
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "a", Modifiers: []string{"control"}})
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "delete"})
	app.wait(5*time.Second, "the entry emptied", func(e event) bool { return e.Event == "changed" && e.Text == "" })
	must[protocol.Empty](a, protocol.MethodClipboardWrite, protocol.ClipboardText{Text: "pasted ✓ ok"})
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "v", Modifiers: []string{"command"}})
	app.wait(5*time.Second, "the pasted text", func(e event) bool { return e.Event == "changed" && e.Text == "pasted ✓ ok" })
	if c := must[protocol.ClipboardText](a, protocol.MethodClipboardRead, nil); c.Text != "pasted ✓ ok" {
		t.Errorf("clipboard_read after write = %q", c.Text)
	}

	// Keys: Return in a GTK entry does nothing visible, but BackSpace does.
	must[protocol.Empty](a, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "backspace"})
	app.wait(5*time.Second, "one character erased", func(e event) bool { return e.Event == "changed" && e.Text == "pasted ✓ o" })

	// The button's accessible frame, clicked, presses the button.
	bx, by := center(button)
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: bx, Y: by})
	if e := app.wait(5*time.Second, "the button's click", func(e event) bool { return e.Event == "clicked" }); e.Text != "pasted ✓ o" {
		t.Errorf("clicked with entry text %q", e.Text)
	}

	// The frontmost app is the test app, and it is among the running apps.
	front := must[protocol.FrontmostApp](a, protocol.MethodFrontmostApp, nil)
	if front.PID != app.pid || !strings.Contains(front.WindowTitle, "Hivecrew Test Form") {
		t.Errorf("frontmost = %+v, want pid %d and the form's title", front, app.pid)
	}
	apps := must[protocol.RunningApps](a, protocol.MethodRunningApps, nil)
	found := false
	for _, ra := range apps.Apps {
		found = found || ra.PID == app.pid
	}
	if !found {
		t.Errorf("running apps %+v lack pid %d", apps.Apps, app.pid)
	}
}

// TestTypingManyDistinctCharacters types more distinct unmapped characters
// than there are spare keycodes, so keycodes must be reused safely.
func TestTypingManyDistinctCharacters(t *testing.T) {
	env := xenv.Start(t, xenv.Options{})
	a := startAgent(t, env)
	app := startApp(t, env, "form")
	entry := waitNode(t, a, "text entry", func(n protocol.Node) bool { return n.Role == "text" && n.Name == "Message" })
	x, y := center(entry)
	must[protocol.Empty](a, protocol.MethodMouseClick, protocol.ClickParams{X: x, Y: y})
	var b strings.Builder
	for r := rune(0x4e00); r < 0x4e00+120; r++ { // 120 distinct CJK characters
		b.WriteRune(r)
	}
	text := b.String() + " — ÄÖÜ ß € 🙂"
	must[protocol.Empty](a, protocol.MethodKeyboardType, protocol.TypeParams{Text: text})
	last := ""
	deadline := time.After(20 * time.Second)
	for last != text {
		select {
		case e := <-app.events:
			if e.Event == "changed" {
				last = e.Text
			}
		case <-deadline:
			t.Fatalf("typed %d runes, entry holds %d:\nwant %q\ngot  %q", len([]rune(text)), len([]rune(last)), text, last)
		}
	}
}
