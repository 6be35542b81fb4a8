package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Shell limits.
const (
	DefaultShellTimeout = 5 * time.Minute
	MaxShellTimeout     = protocol.MaxShellTimeoutSeconds * time.Second
	// DefaultShellOutputCap bounds what run_shell keeps of each stream; the
	// rest is still streamed as $/shellOutput and drained, then dropped.
	DefaultShellOutputCap = 1 << 20
	// shellKillGrace is how long pipes may stay open after the process group
	// is killed (a daemonised grandchild holding them).
	shellKillGrace = 100 * time.Millisecond
)

// shellRunner runs run_shell commands.
type shellRunner struct {
	shared    string
	outputCap int
	// notify streams output; it may be nil.
	notify func(ctx context.Context, p protocol.ShellOutputParams)
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max       int
	buf       bytes.Buffer
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.truncated = true
	}
	return len(p), nil
}

// streamer forwards every write as a $/shellOutput notification.
type streamer struct {
	ctx    context.Context
	stream string
	id     any
	notify func(context.Context, protocol.ShellOutputParams)
}

func (s *streamer) Write(p []byte) (int, error) {
	s.notify(s.ctx, protocol.ShellOutputParams{RequestID: s.id, Stream: s.stream, Data: string(p)})
	return len(p), nil
}

// shellEnv checks run_shell's env and returns it as NAME=value entries,
// sorted by name.
func shellEnv(m map[string]string) ([]string, error) {
	if len(m) > protocol.MaxShellEnv {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "env: %d variables, at most %d", len(m), protocol.MaxShellEnv)
	}
	out, size := make([]string, 0, len(m)), 0
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v := m[name]
		if !protocol.ValidEnvName(name) {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "env: %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", truncateName(name))
		}
		if strings.ContainsRune(v, 0) {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "env: %s has a NUL byte", name)
		}
		if size += len(name) + len(v) + 2; size > protocol.MaxShellEnvBytes {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "env: over %d bytes", protocol.MaxShellEnvBytes)
		}
		out = append(out, name+"="+v)
	}
	return out, nil
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (r *shellRunner) run(ctx context.Context, requestID any, p protocol.ShellParams) (protocol.ShellResult, error) {
	if p.Command == "" {
		return protocol.ShellResult{}, protocol.Errorf(protocol.CodeInvalidParams, "command is required")
	}
	timeout := DefaultShellTimeout
	if p.TimeoutSeconds < 0 {
		return protocol.ShellResult{}, protocol.Errorf(protocol.CodeInvalidParams, "timeoutSeconds must not be negative")
	}
	if p.TimeoutSeconds > 0 {
		// Clamped before it becomes a Duration: 1e12 seconds in
		// nanoseconds overflows an int64 (to a negative timeout).
		timeout = time.Duration(min(p.TimeoutSeconds, MaxShellTimeout.Seconds()) * float64(time.Second))
	}
	env, err := shellEnv(p.Env)
	if err != nil {
		return protocol.ShellResult{}, err
	}
	cwd := r.shared
	if p.Cwd != "" {
		cwd = p.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(r.shared, cwd)
		}
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			return protocol.ShellResult{}, protocol.Errorf(protocol.CodeNotFound, "cwd %s is not a folder", p.Cwd)
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command("/bin/sh", "-c", p.Command)
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), env...), protocol.SharedEnv+"="+r.shared)
	cmd.Stdin = nil
	// Its own process group, so that cancelling kills the whole pipeline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = shellKillGrace
	stdout, stderr := &capped{max: r.outputCap}, &capped{max: r.outputCap}
	var outW, errW io.Writer = stdout, stderr
	if r.notify != nil && requestID != nil {
		// One stream may write while the other does: the notifications are
		// independent, and each writer is used by one goroutine only.
		outW = io.MultiWriter(stdout, &streamer{ctx: ctx, stream: protocol.StreamStdout, id: requestID, notify: r.notify})
		errW = io.MultiWriter(stderr, &streamer{ctx: ctx, stream: protocol.StreamStderr, id: requestID, notify: r.notify})
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		return protocol.ShellResult{}, protocol.Errorf(protocol.CodeInternalError, "start /bin/sh: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var werr error
	var once sync.Once
	kill := func() { once.Do(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) }
	select {
	case werr = <-done:
		// Background children (`server &`) may go on running.
	case <-runCtx.Done():
		kill()
		werr = <-done
	}
	res := protocol.ShellResult{
		Stdout: stdout.buf.String(), Stderr: stderr.buf.String(),
		Truncated: stdout.truncated || stderr.truncated,
	}
	switch {
	case ctx.Err() != nil:
		return protocol.ShellResult{}, ctx.Err()
	case runCtx.Err() != nil:
		res.ExitCode = -1
		res.TimedOut = true
		return res, nil
	}
	var exit *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exit):
		res.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	case errors.Is(werr, exec.ErrWaitDelay):
		// Exited, but a background child kept the pipes open; it was killed.
	default:
		return protocol.ShellResult{}, protocol.Errorf(protocol.CodeInternalError, "run command: %v", werr)
	}
	return res, nil
}
