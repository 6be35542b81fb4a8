package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/xenv"
)

// benchT gives xenv what it needs outside a test: failures abort the run
// after the cleanups ran.
type benchT struct{ cleanups []func() }

func (b *benchT) Helper()          {}
func (b *benchT) Cleanup(f func()) { b.cleanups = append(b.cleanups, f) }
func (b *benchT) Fatalf(format string, args ...any) {
	b.close()
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
func (b *benchT) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

// scrollingTerminal opens an xterm over most of the screen, fills it with
// text and returns a function that scrolls it by a line and waits until
// X has drawn it.
func scrollingTerminal(env *xenv.Env, dir string) (func() error, error) {
	fifo := filepath.Join(dir, "lines")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, err
	}
	// The terminal fits the screen (at 176x52 its last line, where what
	// is typed echoes, was below it) and echoes what is typed, which a
	// reader takes at once (a terminal whose input nobody reads stops
	// echoing once its line buffer is full: typing would draw nothing).
	term := env.Command("xterm", "-geometry", "158x46+0+0", "-fa", "DejaVu Sans Mono", "-fs", "10", "-e",
		"sh", "-c", `stty -icanon; cat "$0" & exec cat >/dev/null`, fifo)
	env.Start(term)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // once cat has opened it
	if err != nil {
		return nil, err
	}
	x, err := xgb.NewConnDisplay(env.Display)
	if err != nil {
		return nil, err
	}
	n := 0
	scroll := func() error {
		n++
		if _, err := fmt.Fprintf(w, "%05d  the quick brown fox jumps over the lazy dog; 0123456789 %s\n", n, strings.Repeat("~=", n%40)); err != nil {
			return err
		}
		time.Sleep(15 * time.Millisecond) // xterm draws
		_, err := xproto.GetInputFocus(x).Reply()
		return err
	}
	for range 60 { // a full terminal: from now on every line scrolls it
		if err := scroll(); err != nil {
			return nil, err
		}
	}
	return scroll, nil
}

const typed50 = "the quick brown fox jumps over the lazy dog again x" // 50 characters

// benchGuest measures one agent step's guest calls over the agent's unix
// socket against the shell-out baseline that reference computer-use agents
// use on Linux: scrot + ImageMagick convert for screenshots, xdotool for
// input. Both run against the same Xvfb in the same run. A terminal fills
// most of the screen, and before every screenshot sample it scrolls by a
// line: the agent's captures skip what did not change, so a still screen
// would flatter them.
func benchGuest(ctx context.Context, log *slog.Logger) ([]Metric, error) {
	for _, tool := range []string{"scrot", "convert", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the baseline needs %s (run make deps): %w", tool, err)
		}
	}
	bt := &benchT{}
	defer bt.close()
	env := xenv.Start(bt, xenv.Options{NoWM: true})
	dir := filepath.Join(env.Dir, "agent")
	sock := filepath.Join(dir, "agent.sock")
	os.MkdirAll(filepath.Join(dir, "shared"), 0o755)
	agent := env.Command("bin/hivecrew-guestagent", "--listen", "unix:"+sock, "--shared", filepath.Join(dir, "shared"), "--log-level", "warn")
	agent.Stderr = os.Stderr
	env.Start(agent)
	// The helper's own client: what it costs to receive a result counts.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The agent runs outside a sandbox here, without --key-fd: the client
	// enrolls a key in its first hello, as on macOS guests.
	cli, err := guest.Connect(wctx, guest.Config{Log: log, Key: guest.FixedKey(vm.NewGuestKey(), true), Dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}})
	if err != nil {
		return nil, fmt.Errorf("the guest agent: %w", err)
	}
	defer cli.Close()
	call := func(method string, params any) func() error {
		return func() error { return cli.Call(ctx, method, params, nil) }
	}
	shell := func(script string) func() error {
		return func() error {
			cmd := env.Command("/bin/sh", "-c", script)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v: %s", script, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	scroll, err := scrollingTerminal(env, dir)
	if err != nil {
		return nil, err
	}
	png := protocol.ScreenshotParams{Format: "png", MaxWidth: 1280, MaxHeight: 800}
	var pngBytes int // the size of the last PNG
	shot := func() error {
		res, err := cli.Screenshot(ctx, png)
		pngBytes = len(res.Data)
		return err
	}
	// What the live view asks for by default (core/api: stream).
	jpeg := protocol.ScreenshotParams{Format: "jpeg", MaxWidth: 1280, MaxHeight: 1280, Quality: 70}
	click := protocol.ClickParams{X: 640, Y: 400}

	type row struct {
		m              Metric
		setup          func() error // untimed, before each sample
		ours, baseline func() error
		n, nb          int
	}
	rows := []row{
		{Metric{Name: "guest: screenshot 1280x800 PNG", Target: 30 * time.Millisecond, BaselineName: "scrot + convert", Note: "the terminal scrolled since the last one"},
			scroll, shot, shell("scrot -o s.png && convert s.png -resize 1280x800 out.png"), 60, 20},
		{Metric{Name: "guest: screenshot 1280x800 PNG, screen unchanged", Target: 30 * time.Millisecond, BaselineName: "scrot + convert"},
			nil, shot, shell("scrot -o s.png && convert s.png -resize 1280x800 out.png"), 60, 20},
		{Metric{Name: "guest: screenshot 1280x800 JPEG", Target: 30 * time.Millisecond, BaselineName: "scrot + convert", Note: "quality 70, as the live view; the terminal scrolled since the last one"},
			scroll, call(protocol.MethodScreenshot, jpeg), shell("scrot -o s.png && convert s.png -resize 1280x800 -quality 70 out.jpg"), 60, 20},
		{Metric{Name: "guest: click", Target: time.Millisecond, BaselineName: "xdotool"},
			nil, call(protocol.MethodMouseClick, click), shell("xdotool mousemove 640 400 click 1"), 300, 40},
		{Metric{Name: "guest: type 50 characters", Target: 5 * time.Millisecond, BaselineName: "xdotool type --delay 12"},
			nil, call(protocol.MethodKeyboardType, protocol.TypeParams{Text: typed50}), shell("xdotool type --delay 12 -- '" + typed50 + "'"), 100, 10},
		// A step acts, then looks: the screenshot waits for the screen to
		// settle after the input (30 ms without drawing), as every agent
		// step's does, and the baseline waits as long. The target is the
		// screenshot's and the input's plus that settle.
		{Metric{Name: "guest: step (type, settled PNG screenshot)", Target: 65 * time.Millisecond, BaselineName: "xdotool type + sleep 0.03 + scrot + convert", MinSpeedup: 4,
			Note: "includes the settle after input (30 ms quiet); the terminal scrolled since the last step"}, scroll,
			func() error {
				if err := call(protocol.MethodKeyboardType, protocol.TypeParams{Text: "x"})(); err != nil {
					return err
				}
				return shot()
			},
			shell("xdotool type -- x && sleep 0.03 && scrot -o s.png && convert s.png -resize 1280x800 out.png"), 60, 20},
	}
	var out []Metric
	for _, r := range rows {
		var err error
		m := r.m
		m.Samples = r.n
		if m.P50, m.P95, err = measureAfter(r.n, 5, r.setup, r.ours); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		if m.Baseline, _, err = measureAfter(r.nb, 2, r.setup, r.baseline); err != nil {
			return nil, fmt.Errorf("%s baseline: %w", m.Name, err)
		}
		if strings.Contains(m.Name, "PNG") {
			m.Note = strings.TrimPrefix(fmt.Sprintf("%s; PNG %d KB", m.Note, pngBytes/1024), "; ")
		}
		out = append(out, m)
	}
	return out, nil
}
