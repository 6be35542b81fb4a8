package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
)

// helperBinary is the helper's executable name.
const helperBinary = config.HelperBinary

// helperStartTimeout bounds how long a started helper may take to answer.
const helperStartTimeout = 20 * time.Second

// helperAlreadyRunning is what a helper says when another one holds the data
// directory: a helper another command started at the same moment.
const helperAlreadyRunning = "another Hivecrew helper is running"

// ensureHelper returns nil once the helper of paths answers /health,
// starting it when it does not: `hivecrew-helper serve --home <home>`,
// detached, logging to <home>/Logs/helper.log.
func ensureHelper(ctx context.Context, c *client.Client, paths config.Paths, stderr io.Writer) error {
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := c.Health(hctx)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	bin, err := findHelper()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(paths.Logs(), 0o700); err != nil {
		return fmt.Errorf("start the helper: %w", err)
	}
	logPath := filepath.Join(paths.Logs(), "helper.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start the helper: %w", err)
	}
	defer logFile.Close()
	logStart, _ := logFile.Seek(0, io.SeekEnd)
	fmt.Fprintf(stderr, "Starting the helper for %s (log: %s)\n", paths.Home, logPath)
	err = launchHelper(ctx, c, bin, paths, logFile, logPath, logStart)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		return err
	}
	def, derr := config.ResolvePaths("")
	if derr == nil && def.Home == paths.Home {
		return fmt.Errorf("%w\n  Another program holds the API port: maybe a helper of another data directory (`ss -ltnp` shows which process). Stop it, or start this one on another port: hivecrew-helper serve --home %s --addr 127.0.0.1:5483", err, paths.Home)
	}
	// A data directory of its own (--home): its helper takes a free port
	// (the CLI speaks over the unix socket; `hivecrew open` finds the web
	// UI's address).
	fmt.Fprintf(stderr, "The API port is taken (by another helper?): this helper takes a free one; `hivecrew open --print` shows its address.\n")
	logStart, _ = logFile.Seek(0, io.SeekEnd)
	return launchHelper(ctx, c, bin, paths, logFile, logPath, logStart, "--addr", "127.0.0.1:0")
}

// launchHelper starts `hivecrew-helper serve --home <home> args...` detached
// and waits until it answers, or says why it exited.
func launchHelper(ctx context.Context, c *client.Client, bin string, paths config.Paths, logFile *os.File, logPath string, logStart int64, args ...string) error {
	cmd := exec.Command(bin, append([]string{"serve", "--home", paths.Home}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = "/"
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the helper (%s): %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps the helper only if it fails to start

	wctx, wcancel := context.WithTimeout(ctx, helperStartTimeout)
	defer wcancel()
	healthy := make(chan error, 1)
	go func() { healthy <- c.WaitHealthy(wctx) }()
	select {
	case err := <-healthy:
		if err != nil {
			return fmt.Errorf("the helper did not answer within %s (see %s): %w", helperStartTimeout, logPath, err)
		}
		return nil
	case err := <-exited:
		last := lastLine(logPath, logStart)
		if strings.Contains(last, helperAlreadyRunning) {
			// Another command started it at the same moment: wait for that one.
			if err := <-healthy; err != nil {
				return fmt.Errorf("another helper holds %s but does not answer: %w", paths.Home, err)
			}
			return nil
		}
		wcancel()
		<-healthy
		if last == "" {
			last = "no output"
		}
		why := "the helper exited at once"
		if err != nil {
			why += " (" + err.Error() + ")"
		}
		return fmt.Errorf("%s: %s (log: %s)", why, strings.TrimPrefix(last, "hivecrew-helper: "), logPath)
	}
}

// findHelper finds hivecrew-helper next to the running executable (bin/),
// in Hivecrew.app's helper bundle, else in PATH.
func findHelper() (string, error) {
	var cands []string
	if in, err := config.CurrentInstall(); err == nil {
		cands = in.HelperCandidates()
		if p, ok := config.FirstExecutable(cands); ok {
			return p, nil
		}
	}
	p, err := exec.LookPath(helperBinary)
	if err == nil {
		return p, nil
	}
	where := "in PATH"
	if len(cands) > 0 {
		where = "at " + strings.Join(cands, " or ") + " or in PATH"
	}
	return "", fmt.Errorf("the helper is not running and %s was not found %s: install it next to hivecrew (`make build` puts both in bin/)", helperBinary, where)
}

// findGuestAgent finds the guest agent the way the helper does (next to
// the running executable, else in Hivecrew.app's Resources); "" when
// there is none, and the helper then looks for itself.
func findGuestAgent() string {
	in, err := config.CurrentInstall()
	if err != nil {
		return ""
	}
	p, _ := config.FirstExecutable(in.GuestAgentCandidates())
	return p
}

// lastLine returns the last non-empty line written to the file at path
// after offset from.
func lastLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	start := max(from, fi.Size()-4096)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(buf), []byte("\n"))
	return strings.TrimSpace(string(lines[len(lines)-1]))
}
