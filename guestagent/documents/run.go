package documents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Command is a tool run on a file: bounded in time (Timeout), in what it
// prints (OutputCap bytes of stdout; stderr is kept to its first 16 KB),
// and, where the guest has prlimit(1), in memory (Memory bytes of address
// space), CPU (Timeout's seconds) and the files it writes (FileCap bytes
// each).
type Command struct {
	// Name is what the errors call it ("pdftotext"); Args the program
	// and its arguments.
	Name string
	Args []string
	// Dir is where it runs; Env, when set, its environment.
	Dir string
	Env []string

	Timeout   time.Duration
	OutputCap int
	Memory    int64
	FileCap   int64
	// What says, for the errors, what it was doing ("reading pages 1-10
	// of inbox/report.pdf").
	What string
}

// stderrCap bounds the standard error kept of a command.
const stderrCap = 16 << 10

// killGrace is how long a killed command's pipes may stay open (a child
// that left the process group holding them).
const killGrace = 200 * time.Millisecond

// errOutputCap stops a command that printed more than its cap.
var errOutputCap = errors.New("output over its cap")

// capWriter keeps what is written up to max bytes and calls over once
// when more comes.
type capWriter struct {
	buf  bytes.Buffer
	max  int
	over func()
	hit  bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		if !w.hit && w.over != nil {
			w.hit = true
			w.over()
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

// Output is what a command printed: its standard output, and the first
// stderrCap bytes of its standard error.
type Output struct {
	Stdout []byte
	Stderr string
}

// Run runs c and returns what it printed. It fails with a protocol
// error that names the bound it met: the time limit (CodeTimeout), the
// output cap (CodeTooLarge), a crash or a limit's signal, or an exit
// status (with the first lines of stderr) (CodeUnsupported). A cancelled
// ctx kills it and returns ctx's error.
func Run(ctx context.Context, c Command) (Output, error) {
	if _, err := exec.LookPath(c.Args[0]); err != nil {
		return Output{}, protocol.Errorf(protocol.CodeUnsupported, "this guest has no %s to read the file with", c.Name)
	}
	argv := c.Args
	if lim, err := exec.LookPath("prlimit"); err == nil {
		limits := []string{lim, "--cpu=" + strconv.Itoa(int(c.Timeout.Seconds())+1)}
		if c.Memory > 0 {
			limits = append(limits, "--as="+strconv.FormatInt(c.Memory, 10))
		}
		if c.FileCap > 0 {
			limits = append(limits, "--fsize="+strconv.FormatInt(c.FileCap, 10))
		}
		argv = append(append(limits, "--"), argv...)
	}
	runCtx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = killGrace
	overflow := make(chan struct{})
	stdout := &capWriter{max: c.OutputCap, over: func() { close(overflow) }}
	stderr := &capWriter{max: stderrCap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Output{}, protocol.Errorf(protocol.CodeInternalError, "start %s: %v", c.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var err error
	select {
	case err = <-done:
		// Helpers it left behind in its group go with it.
		kill()
	case <-runCtx.Done():
		kill()
		err = <-done
	case <-overflow:
		kill()
		<-done
		err = errOutputCap
	}
	switch {
	case ctx.Err() != nil:
		return Output{}, ctx.Err()
	case runCtx.Err() != nil:
		return Output{}, protocol.Errorf(protocol.CodeTimeout, "%s did not finish within %s %s: the file is too large or too complex to read (it was stopped)",
			c.Name, c.Timeout, c.What)
	case errors.Is(err, errOutputCap):
		return Output{}, protocol.Errorf(protocol.CodeTooLarge, "%s wrote more than %s %s: refused as too large (it was stopped)",
			c.Name, human(int64(c.OutputCap)), c.What)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			why := "crashed (" + ws.Signal().String() + ")"
			switch ws.Signal() {
			case syscall.SIGXCPU, syscall.SIGKILL:
				why = fmt.Sprintf("was stopped at its limit (%s, after %s)", ws.Signal(), time.Since(start).Round(time.Millisecond))
			}
			return Output{}, protocol.Errorf(protocol.CodeUnsupported, "%s %s %s: the file is damaged, hostile or too large to read%s",
				c.Name, why, c.What, firstLines(stderr.buf.String()))
		}
		return Output{}, protocol.Errorf(protocol.CodeUnsupported, "%s failed %s (exit status %d)%s", c.Name, c.What, exit.ExitCode(), firstLines(stderr.buf.String()))
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return Output{}, protocol.Errorf(protocol.CodeInternalError, "run %s: %v", c.Name, err)
	}
	return Output{Stdout: stdout.buf.Bytes(), Stderr: stderr.buf.String()}, nil
}

// firstLines is ": " and the first three lines of a tool's stderr, or
// nothing.
func firstLines(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if lines[0] == "" {
		return ""
	}
	for i := range lines {
		lines[i] = clip(strings.TrimSpace(lines[i]), 200)
	}
	return ": " + strings.Join(lines[:min(len(lines), 3)], " / ")
}
