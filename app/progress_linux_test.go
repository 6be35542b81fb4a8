package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// openPTY returns a pseudo-terminal's two ends.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 60}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestRunWaitShowsALiveLineOnATerminal: on a terminal, run --wait
// rewrites one status line in place (status, step, elapsed, activity,
// within the terminal's width) and clears it at the end.
func TestRunWaitShowsALiveLineOnATerminal(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Click the button.", llmtest.Tool("mouse_click", map[string]any{"x": 10, "y": 20}), llmtest.Text("Clicked."), llmtest.Verdict(true, "Clicked the button."))
	master, tty := openPTY(t)
	defer master.Close()
	seen := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // ends with EIO once the terminal is closed
		seen <- b.Bytes()
	}()
	var out syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"run", "Click the button.", "--wait", "--home", h.home}, &out, tty) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(cliTimeout):
		t.Fatal("run --wait hangs")
	}
	tty.Close()
	got := string(<-seen)
	if code != 0 || !strings.Contains(out.String(), "Clicked the button.") {
		t.Fatalf("exit %d\nstdout: %s\nterminal: %q", code, out.String(), got)
	}
	if !strings.HasSuffix(got, "\r\x1b[K") || strings.Contains(got, "\n") {
		t.Fatalf("the line is not rewritten in place and cleared: %q", got)
	}
	var running bool
	for _, l := range strings.Split(got, "\r") {
		l = strings.TrimSuffix(l, "\x1b[K")
		if len([]rune(l)) > 59 {
			t.Errorf("line wider than the terminal: %q", l)
		}
		if strings.HasPrefix(l, "running · step ") && strings.Contains(l, " · 0:0") {
			running = true
		}
	}
	if !running {
		t.Fatalf("no running line with step and elapsed time: %q", got)
	}
}
