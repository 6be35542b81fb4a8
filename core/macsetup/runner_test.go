package macsetup

import (
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeConsole shows a list of synthetic screens; a click, or the keys
// that end a screen (advance, in typed's notation: "<return>" unless set)
// move it to the next. It records what it was sent.
type fakeConsole struct {
	// mu guards the fields below.
	mu      sync.Mutex
	screens []*image.RGBA
	advance []string
	at      int
	// mark is how much of the typing had been typed when the screen came.
	mark int
	// before are frames shown before the first screen (a booting VM).
	before []*image.RGBA
	events []keyEvent
	clicks []image.Point
}

func (f *fakeConsole) Frame(ctx context.Context) (*image.RGBA, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.before) > 0 {
		img := f.before[0]
		f.before = f.before[1:]
		return img, nil
	}
	return f.screens[min(f.at, len(f.screens)-1)], nil
}

func (f *fakeConsole) Key(ctx context.Context, keysym uint32, down bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, keyEvent{keysym, down})
	end := "<return>"
	if f.at < len(f.advance) && f.advance[f.at] != "" {
		end = f.advance[f.at]
	}
	if typed := f.typedLocked(); down && strings.HasSuffix(typed[f.mark:], end) {
		f.at++
		f.mark = len(typed)
	}
	return nil
}

func (f *fakeConsole) Pointer(ctx context.Context, x, y int, buttons uint8) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if buttons == 1 {
		f.clicks = append(f.clicks, image.Pt(x, y))
		f.at++
		f.mark = len(f.typedLocked())
	}
	return nil
}

// typed is the text the key events typed (Shift applied), chords as
// <name>.
func (f *fakeConsole) typed() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.typedLocked()
}

func (f *fakeConsole) typedLocked() string {
	names := map[uint32]string{}
	for n, k := range keysyms {
		names[k] = n
	}
	var b strings.Builder
	shift := false
	for _, e := range f.events {
		switch {
		case e.keysym == keysyms["shift"]:
			shift = e.down
		case !e.down:
		case e.keysym >= 0x21 && e.keysym < 0x7f && !shift:
			b.WriteRune(rune(e.keysym))
		case e.keysym >= 0x21 && e.keysym < 0x7f:
			b.WriteRune(rune(e.keysym))
		default:
			if shift {
				b.WriteString("<shift+" + names[e.keysym] + ">")
			} else {
				b.WriteString("<" + names[e.keysym] + ">")
			}
		}
	}
	return b.String()
}

func runFake(t *testing.T, c *fakeConsole, steps []Step) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Run(ctx, Config{Console: c, Reader: newGlyphReader(), Steps: steps, ShotDir: t.TempDir(),
		Vars: map[string]string{"user": "hivecrew", "password": "Pw9x"}, KeyDelay: time.Microsecond, Poll: 5 * time.Millisecond, Still: 5 * time.Millisecond})
}

func TestGlyphReaderReadsSyntheticScreens(t *testing.T) {
	img := render(line{"Select Your Country or Region", 123, 57}, line{"Continue", 500, 340})
	texts, err := newGlyphReader().Read(context.Background(), img)
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 2 || texts[0].String != "Select Your Country or Region" || texts[1].String != "Continue" {
		t.Fatalf("read %+v", texts)
	}
	if b := texts[1].Box; b.Min.X != 500 || b.Min.Y != 340 || b.Dx() != 8*glyphW {
		t.Errorf("Continue's box %v, want it at 500,340, 8 cells wide", b)
	}
}

// TestRunChecksEachScreenBeforeItTypes: each step acts only on its own
// screen, the account's name and password are typed where the account is
// made, Shift is held for capitals, and a screen that is not there
// (optional) is skipped.
func TestRunChecksEachScreenBeforeItTypes(t *testing.T) {
	c := &fakeConsole{
		before: []*image.RGBA{black(), black()},
		screens: []*image.RGBA{
			titled("Select Your Country or Region", "United States", "Continue"),
			titled("Create a Mac Account", "Full name", "Account name", "Password"),
			titled("Finder  File  Edit  View"),
		},
		advance: []string{"<shift+tab><space>"},
	}
	steps := []Step{
		{Name: "Country", Expect: []string{"Select Your Country or Region"}, Do: []Action{Type("united states"), Keys("shift+tab", "space")}},
		{Name: "Transfer", Expect: []string{"Transfer Your Data to This Mac"}, Optional: true, Do: []Action{Keys("tab", "space")}},
		{Name: "Account", Expect: []string{"create a mac account"}, Do: []Action{Type("{{user}}"), Keys("tab"), Type("{{password}}"), Keys("return")}},
		{Name: "Desktop", Expect: []string{"Finder"}},
	}
	if err := runFake(t, c, steps); err != nil {
		t.Fatal(err)
	}
	got := c.typed()
	// Shift+Tab goes back to Continue; Space then acts on it.
	want := "united<space>states<shift+tab><space>hivecrew<tab>Pw9x<return>"
	if got != want {
		t.Errorf("typed %q, want %q", got, want)
	}
}

// TestRunStopsAtAnUnexpectedScreen: a screen that is not the one expected
// stops the run before anything is typed on it, and says what it expected,
// what the screen showed, and where its screenshot is.
func TestRunStopsAtAnUnexpectedScreen(t *testing.T) {
	c := &fakeConsole{screens: []*image.RGBA{titled("Software Update Required", "Update Now")}}
	steps := []Step{{Name: "Terms", Expect: []string{"Terms and Conditions"}, Wait: 50 * time.Millisecond, Do: []Action{Keys("space")}}}
	err := runFake(t, c, steps)
	var se *ScreenError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want a ScreenError", err)
	}
	if se.Step != "Terms" || !slices.Contains(se.Saw, "Software Update Required") || se.Blank {
		t.Errorf("the error: %+v", se)
	}
	if !strings.Contains(err.Error(), `expected a screen showing "Terms and Conditions"`) || !strings.Contains(err.Error(), se.Shot) {
		t.Errorf("message: %v", err)
	}
	f, ferr := os.Open(se.Shot)
	if ferr != nil {
		t.Fatalf("the screenshot: %v", ferr)
	}
	defer f.Close()
	img, derr := png.Decode(f)
	if derr != nil || img.Bounds().Dx() != screenW || filepath.Ext(se.Shot) != ".png" {
		t.Errorf("the screenshot %s: %v %v", se.Shot, img.Bounds(), derr)
	}
	if len(c.events) != 0 {
		t.Errorf("keys were sent to the wrong screen: %q", c.typed())
	}
}

func TestRunSaysABlankScreenIsBlank(t *testing.T) {
	c := &fakeConsole{screens: []*image.RGBA{black()}}
	err := runFake(t, c, []Step{{Name: "Hello", Expect: []string{"hello"}, Wait: 30 * time.Millisecond}})
	var se *ScreenError
	if !errors.As(err, &se) || !se.Blank || !strings.Contains(err.Error(), "a blank screen") {
		t.Fatalf("err %v", err)
	}
}

// TestRunStopsAtAFailureMark: a script's failure mark on the screen stops
// the run at once, with the screen's text.
func TestRunStopsAtAFailureMark(t *testing.T) {
	c := &fakeConsole{screens: []*image.RGBA{titled("% sh unattended.sh", FailedMark+": sudo refused the password")}}
	err := runFake(t, c, []Step{{Name: "unattended.sh", Expect: []string{DoneMark}, Fail: []string{FailedMark}}})
	var se *ScreenError
	if !errors.As(err, &se) || se.Failed != FailedMark || !strings.Contains(err.Error(), "sudo refused the password") {
		t.Fatalf("err %v", err)
	}
}

// TestClickFindsThePhrase: a click lands on the middle of the phrase's
// line; a row's end on the right of its row.
func TestClickFindsThePhrase(t *testing.T) {
	c := &fakeConsole{screens: []*image.RGBA{
		render(line{"\"Terminal\" would like to access files on a network volume.", 40, 100}, line{"Allow", 420, 200}),
		render(line{"Screen Recording", 200, 40}, line{"Allow the applications below to record the screen.", 200, 80}, line{"hivecrew-guestagent", 220, 140}),
		titled("done"),
	}}
	steps := []Step{
		{Name: "Access", Expect: []string{"would like to access files on a network volume"}, Do: []Action{Click("Allow")}},
		{Name: "Pane", Expect: []string{"Screen Recording"}, Do: []Action{ClickRowEnd("hivecrew-guestagent")}},
		{Name: "Done", Expect: []string{"done"}},
	}
	if err := runFake(t, c, steps); err != nil {
		t.Fatal(err)
	}
	if len(c.clicks) != 2 {
		t.Fatalf("clicks %v", c.clicks)
	}
	if p := c.clicks[0]; p.X != 420+5*glyphW/2 || p.Y != 200+glyphH/2 {
		t.Errorf("Allow clicked at %v", p)
	}
	descEnd := 200 + len("Allow the applications below to record the screen.")*glyphW
	if p := c.clicks[1]; p.Y != 140+glyphH/2 || p.X <= 220+len("hivecrew-guestagent")*glyphW || p.X > descEnd {
		t.Errorf("the row's switch clicked at %v, want the row's y and an x right of its name, within the pane (%d)", p, descEnd)
	}
}

// TestSequoiaScript: the shipped script is well formed: every step has a
// screen to look for, types only what the console can type, and uses only
// the variables the manager provides.
func TestSequoiaScript(t *testing.T) {
	vars := map[string]string{"user": "u", "password": "p", "kit": "/k"}
	steps := Sequoia()
	if len(steps) < 20 {
		t.Fatalf("%d steps", len(steps))
	}
	for _, s := range steps {
		if s.Name == "" || len(s.Expect) == 0 {
			t.Errorf("step %+v has no name or screen", s)
		}
		for _, a := range s.Do {
			for _, k := range a.keys {
				if _, err := chord(k); err != nil {
					t.Errorf("%s: %v", s.Name, err)
				}
			}
			text, err := expand(a.text, vars)
			if err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
			if _, err := typing(text); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
		}
	}
	if last := steps[len(steps)-1]; last.Optional {
		t.Error("the last step is optional")
	}
}
