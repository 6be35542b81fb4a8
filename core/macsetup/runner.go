package macsetup

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/files"
)

// Console is a VM's own screen and keyboard (Client).
type Console interface {
	Frame(ctx context.Context) (*image.RGBA, error)
	Key(ctx context.Context, keysym uint32, down bool) error
	Pointer(ctx context.Context, x, y int, buttons uint8) error
}

var _ Console = (*Client)(nil)

// Step is one screen of the script: the phrases one of which the screen
// must show before the step acts, and what it does then.
type Step struct {
	// Name says what the screen is, for progress and errors.
	Name string
	// Expect are phrases (any one will do) the screen must show.
	Expect []string
	// Optional screens may not come (they depend on the macOS version or
	// the Mac): when a later step's screen shows instead, it is skipped.
	Optional bool
	// Wait bounds the wait for the screen; default DefaultWait.
	Wait time.Duration
	// Fail are phrases that, shown instead, stop the run at once (a
	// script's failure message).
	Fail []string
	// Do is what the step does once its screen shows.
	Do []Action
}

// DefaultWait is how long a step waits for its screen.
const DefaultWait = 3 * time.Minute

// Action is one thing a step does: keys, text, a click on a phrase, or a
// pause. Build actions with Keys, Type, Click and Pause.
type Action struct {
	keys  []string
	text  string
	click string
	// rowEnd clicks the right end of the row that shows click (a
	// switch in a settings list).
	rowEnd bool
	pause  time.Duration
}

// Keys presses each chord in turn ("tab", "shift+tab", "command+space").
func Keys(chords ...string) Action { return Action{keys: chords} }

// Type types text on the US layout; {{name}} is replaced by the run's
// variable name (Config.Vars) and is not logged.
func Type(text string) Action { return Action{text: text} }

// Click clicks the middle of the first line that shows phrase.
func Click(phrase string) Action { return Action{click: phrase} }

// ClickRowEnd clicks the right end of the row that shows phrase: where a
// System Settings list puts a row's switch. The row's end is taken as the
// right edge of the widest text of the pane (its description spans the
// pane's width), less a margin.
func ClickRowEnd(phrase string) Action { return Action{click: phrase, rowEnd: true} }

// Pause waits.
func Pause(d time.Duration) Action { return Action{pause: d} }

// Config configures Run. Console, Reader and Steps are required.
type Config struct {
	Console Console
	Reader  Reader
	Steps   []Step
	// Vars are the values of {{name}} in typed text (the account's name
	// and password).
	Vars map[string]string
	// ShotDir is where the screen that stopped a run is saved (PNG).
	ShotDir string
	// Progress, if set, is told of each step as it starts.
	Progress func(i, n int, name string)
	Log      *slog.Logger
	// KeyDelay is the pause between key events (default 40 ms); Poll
	// between looks at the screen (default 1 s); Still how long the
	// screen must not change before it is read (default 700 ms).
	KeyDelay, Poll, Still time.Duration
}

// ScreenError is a screen that was not the one a step expected.
type ScreenError struct {
	Step string
	// Expect are the phrases looked for; Saw the screen's text (first
	// lines, printable).
	Expect []string
	Saw    []string
	// Shot is the screenshot's path ("" if it could not be saved).
	Shot string
	// Blank says the screen never showed anything to read.
	Blank bool
	// Failed is the failure phrase the screen showed, if that stopped it.
	Failed string
}

func (e *ScreenError) Error() string {
	saw := "nothing readable"
	if e.Blank {
		saw = "a blank screen"
	} else if len(e.Saw) > 0 {
		saw = `"` + strings.Join(e.Saw, `" | "`) + `"`
	}
	shot := ""
	if e.Shot != "" {
		shot = "; screenshot: " + e.Shot
	}
	if e.Failed != "" {
		return fmt.Sprintf("unattended setup stopped at %q: the screen shows %q: %s%s", e.Step, e.Failed, saw, shot)
	}
	return fmt.Sprintf("unattended setup stopped at %q: expected a screen showing %q, the screen shows %s%s", e.Step, strings.Join(e.Expect, `" or "`), saw, shot)
}

// Run drives the VM through the steps. It stops at the first screen that
// is not the one expected (a *ScreenError) or when ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Console == nil || cfg.Reader == nil {
		return errors.New("macsetup: Console and Reader are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.KeyDelay = orDuration(cfg.KeyDelay, 40*time.Millisecond)
	cfg.Poll = orDuration(cfg.Poll, time.Second)
	cfg.Still = orDuration(cfg.Still, 700*time.Millisecond)
	r := runner{cfg: cfg}
	for i := 0; i < len(cfg.Steps); i++ {
		step := cfg.Steps[i]
		if cfg.Progress != nil {
			cfg.Progress(i, len(cfg.Steps), step.Name)
		}
		at, texts, err := r.await(ctx, i)
		if err != nil {
			return err
		}
		if at != i {
			cfg.Log.Info("screen not shown: skipped", "step", step.Name, "next", cfg.Steps[at].Name)
			i = at
			step = cfg.Steps[i]
			if cfg.Progress != nil {
				cfg.Progress(i, len(cfg.Steps), step.Name)
			}
		}
		cfg.Log.Info("screen recognised", "step", step.Name)
		for _, a := range step.Do {
			if err := r.act(ctx, a, texts); err != nil {
				return fmt.Errorf("step %q: %w", step.Name, err)
			}
		}
	}
	return nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

type runner struct{ cfg Config }

// await waits until the screen of step i shows, or, while steps from i
// on are optional, the screen of a later step (whose index it returns).
// It returns the screen's text.
func (r *runner) await(ctx context.Context, i int) (int, []Text, error) {
	step := r.cfg.Steps[i]
	deadline := time.Now().Add(orDuration(step.Wait, DefaultWait))
	var last *image.RGBA
	var lastTexts []Text
	wasBlank := true
	for {
		img, isBlank, err := r.still(ctx)
		if err != nil {
			return 0, nil, err
		}
		last, wasBlank = img, isBlank
		if !isBlank {
			texts, err := r.cfg.Reader.Read(ctx, img)
			if err != nil {
				return 0, nil, fmt.Errorf("read the screen: %w", err)
			}
			lastTexts = texts
			if p, failed := anyOf(texts, step.Fail); failed {
				err := r.stopped(step, last, lastTexts, false).(*ScreenError)
				err.Failed = p
				return 0, nil, err
			}
			for j := i; j < len(r.cfg.Steps); j++ {
				if _, ok := anyOf(texts, r.cfg.Steps[j].Expect); ok {
					return j, texts, nil
				}
				if !r.cfg.Steps[j].Optional {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, nil, r.stopped(step, last, lastTexts, wasBlank)
		}
		if err := sleep(ctx, r.cfg.Poll); err != nil {
			return 0, nil, err
		}
	}
}

// still returns the screen once it has not changed for Still (an
// animation, a sheet sliding in, is not read halfway), or the latest
// frame after 10 tries; and whether it is blank.
func (r *runner) still(ctx context.Context) (*image.RGBA, bool, error) {
	img, err := r.cfg.Console.Frame(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("read the VM's screen: %w", err)
	}
	fp := fingerprint(img)
	for range 10 {
		if err := sleep(ctx, r.cfg.Still); err != nil {
			return nil, false, err
		}
		next, err := r.cfg.Console.Frame(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("read the VM's screen: %w", err)
		}
		nfp := fingerprint(next)
		same := sameScreen(fp, nfp)
		img, fp = next, nfp
		if same {
			break
		}
	}
	return img, blank(fp), nil
}

// stopped saves the screen and describes it.
func (r *runner) stopped(step Step, img *image.RGBA, texts []Text, isBlank bool) error {
	e := &ScreenError{Step: step.Name, Expect: step.Expect, Blank: isBlank}
	for _, t := range texts {
		if len(e.Saw) == 8 {
			break
		}
		if s := strings.TrimSpace(t.String); s != "" {
			e.Saw = append(e.Saw, files.Printable(s))
		}
	}
	if img != nil && r.cfg.ShotDir != "" {
		path := filepath.Join(r.cfg.ShotDir, "unattended-"+slugName(step.Name)+".png")
		if err := savePNG(path, img); err != nil {
			r.cfg.Log.Warn("save the screen that stopped the setup", "err", err)
		} else {
			e.Shot = path
		}
	}
	return e
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

func slugName(s string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func savePNG(path string, img image.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// act does one action on the screen whose text is texts.
func (r *runner) act(ctx context.Context, a Action, texts []Text) error {
	switch {
	case a.pause > 0:
		return sleep(ctx, a.pause)
	case a.click != "":
		t, ok := find(texts, a.click)
		if !ok {
			return fmt.Errorf("no %q on the screen to click", a.click)
		}
		x, y := (t.Box.Min.X+t.Box.Max.X)/2, (t.Box.Min.Y+t.Box.Max.Y)/2
		if a.rowEnd {
			x = rowEnd(texts, t)
		}
		for _, buttons := range []uint8{0, 1, 0} {
			if err := r.cfg.Console.Pointer(ctx, x, y, buttons); err != nil {
				return err
			}
			if err := sleep(ctx, r.cfg.KeyDelay); err != nil {
				return err
			}
		}
		return nil
	case len(a.keys) > 0:
		for _, c := range a.keys {
			events, err := chord(c)
			if err != nil {
				return err
			}
			if err := r.send(ctx, events); err != nil {
				return err
			}
		}
		return nil
	}
	text, err := expand(a.text, r.cfg.Vars)
	if err != nil {
		return err
	}
	events, err := typing(text)
	if err != nil {
		return err
	}
	return r.send(ctx, events)
}

// rowEnd is the x of the right end of row's row: the right edge of the
// widest text that starts at or right of the row's text (not the
// sidebar's), less a margin of a fortieth of that width.
func rowEnd(texts []Text, row Text) int {
	right := row.Box.Max.X
	for _, t := range texts {
		if t.Box.Min.X >= row.Box.Min.X-row.Box.Dx() && t.Box.Max.X > right {
			right = t.Box.Max.X
		}
	}
	return right - max((right-row.Box.Min.X)/40, 4)
}

func (r *runner) send(ctx context.Context, events []keyEvent) error {
	for _, e := range events {
		if err := r.cfg.Console.Key(ctx, e.keysym, e.down); err != nil {
			return fmt.Errorf("send a key: %w", err)
		}
		if err := sleep(ctx, r.cfg.KeyDelay); err != nil {
			return err
		}
	}
	return nil
}

var varRef = regexp.MustCompile(`\{\{([a-zA-Z]+)\}\}`)

// expand replaces {{name}} with vars[name]; a name without a value is an
// error.
func expand(text string, vars map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(text, func(m string) string {
		name := varRef.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
