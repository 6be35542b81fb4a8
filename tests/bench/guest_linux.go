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
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
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

const typed50 = "the quick brown fox jumps over the lazy dog again x" // 50 characters

// benchGuest measures one agent step's guest calls over the agent's unix
// socket against the shell-out baseline that reference computer-use agents
// use on Linux: scrot + ImageMagick convert for screenshots, xdotool for
// input. Both run against the same Xvfb in the same run.
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
	var conn net.Conn
	env.WaitFor(5*time.Second, "the guest agent", func() bool {
		var err error
		conn, err = net.Dial("unix", sock)
		return err == nil
	})
	cli := jrpc2.NewClient(transport.Line(conn, conn), nil)
	defer cli.Close()
	call := func(method string, params any) func() error {
		return func() error {
			_, err := cli.Call(ctx, method, params)
			return err
		}
	}
	if err := call(protocol.MethodHello, protocol.HelloParams{ProtocolVersion: protocol.Version})(); err != nil {
		return nil, err
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
	png := protocol.ScreenshotParams{Format: "png", MaxWidth: 1280, MaxHeight: 800}
	jpeg := protocol.ScreenshotParams{Format: "jpeg", MaxWidth: 1280, MaxHeight: 800, Quality: 80}
	click := protocol.ClickParams{X: 640, Y: 400}

	type row struct {
		m              Metric
		ours, baseline func() error
		n, nb          int
	}
	rows := []row{
		{Metric{Name: "guest: screenshot 1280x800 PNG", Target: 30 * time.Millisecond, BaselineName: "scrot + convert"},
			call(protocol.MethodScreenshot, png), shell("scrot -o s.png && convert s.png -resize 1280x800 out.png"), 60, 20},
		{Metric{Name: "guest: screenshot 1280x800 JPEG", Target: 30 * time.Millisecond, BaselineName: "scrot + convert"},
			call(protocol.MethodScreenshot, jpeg), shell("scrot -o s.png && convert s.png -resize 1280x800 -quality 80 out.jpg"), 60, 20},
		{Metric{Name: "guest: click", Target: time.Millisecond, BaselineName: "xdotool"},
			call(protocol.MethodMouseClick, click), shell("xdotool mousemove 640 400 click 1"), 300, 40},
		{Metric{Name: "guest: type 50 characters", Target: 5 * time.Millisecond, BaselineName: "xdotool type --delay 12"},
			call(protocol.MethodKeyboardType, protocol.TypeParams{Text: typed50}), shell("xdotool type --delay 12 -- '" + typed50 + "'"), 100, 10},
		{Metric{Name: "guest: step (PNG screenshot + click)", Target: 35 * time.Millisecond, BaselineName: "scrot + convert + xdotool", MinSpeedup: 10},
			func() error {
				if err := call(protocol.MethodScreenshot, png)(); err != nil {
					return err
				}
				return call(protocol.MethodMouseClick, click)()
			},
			shell("scrot -o s.png && convert s.png -resize 1280x800 out.png && xdotool mousemove 640 400 click 1"), 60, 20},
	}
	var out []Metric
	for _, r := range rows {
		var err error
		m := r.m
		m.Samples = r.n
		if m.P50, m.P95, err = measure(r.n, 5, r.ours); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		if m.Baseline, _, err = measure(r.nb, 2, r.baseline); err != nil {
			return nil, fmt.Errorf("%s baseline: %w", m.Name, err)
		}
		out = append(out, m)
	}
	return out, nil
}
