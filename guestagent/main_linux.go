package main

import (
	"context"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/jezek/xgb"
	"github.com/mdlayher/vsock"
	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/guestagent/documents"
	"github.com/hivecrew/hivecrew/guestagent/linux"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

func newDriver(ctx context.Context, o options, log *slog.Logger) (server.Driver, func() error, error) {
	// xgb logs to its own logger (e.g. a missing .Xauthority, which is
	// normal for a sandbox display); route it to ours at debug level.
	xgb.Logger = stdlog.New(slogWriter{log}, "", 0)
	var session *linux.Session
	if o.session != "" {
		var w, h int
		if _, err := fmt.Sscanf(o.session, "%dx%d", &w, &h); err != nil || w < 320 || h < 200 || w > 7680 || h > 4320 {
			return nil, nil, fmt.Errorf("--session %q: want WIDTHxHEIGHT, e.g. 1280x800", o.session)
		}
		var err error
		if session, err = linux.StartSession(ctx, linux.SessionOptions{Width: w, Height: h}); err != nil {
			return nil, nil, err
		}
		// The agent's own environment is what the apps it opens inherit.
		for _, kv := range session.Env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				os.Setenv(k, v)
			}
		}
		log.Info("desktop session started", "display", session.Display)
		o.display = session.Display
	}
	var powerOff []string
	if o.powerOff {
		powerOff = []string{"systemctl", "poweroff"}
	}
	d, err := linux.New(ctx, linux.Config{Display: o.display, PowerOff: powerOff, Log: log, Session: session})
	if err != nil {
		if session != nil {
			session.Close()
		}
		return nil, nil, err
	}
	if session == nil {
		return d, d.Close, nil
	}
	// The agent's work ends with its desktop (unless the agent is the one
	// closing it).
	var closing atomic.Bool
	go func() {
		<-session.Done()
		if !closing.Load() {
			log.Error("the X server of the session exited; stopping")
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
		}
	}()
	return d, func() error {
		closing.Store(true)
		err := d.Close()
		session.Close()
		return err
	}, nil
}

// newDocuments returns the Linux guest's document tools (poppler-utils,
// LibreOffice, heif-convert), LibreOffice's profile in a private folder.
func newDocuments() (documents.Extractor, func(), error) {
	dir, err := os.MkdirTemp("", "hivecrew-office-")
	if err != nil {
		return nil, nil, fmt.Errorf("a folder for the document tools: %w", err)
	}
	return documents.NewTools(dir), func() { os.RemoveAll(dir) }, nil
}

// extractDocument is the macOS guest's child reader; a Linux guest reads
// documents with its tools.
func extractDocument([]string) (int, bool) { return 0, false }

// fdDir lists the process's open descriptors.
const fdDir = "/proc/self/fd"

// harden makes the agent non-dumpable: other processes of its uid in the
// guest cannot ptrace it or read its /proc files (mem, environ, fd), which
// would give them the boot key.
func harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the agent non-dumpable: %w", err)
	}
	return nil
}

func listenVsock(port uint32) (net.Listener, error) { return vsock.Listen(port, nil) }

// runPlatform runs serve; Linux needs no main-thread run loop.
func runPlatform(serve func() error) error { return serve() }

// slogWriter writes each line at debug level.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Debug(strings.TrimSpace(string(p)), "from", "xgb")
	return len(p), nil
}
