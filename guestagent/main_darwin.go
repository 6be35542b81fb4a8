package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/guestagent/darwin"
	"github.com/hivecrew/hivecrew/guestagent/documents"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// The Cocoa main run loop must run on the main thread.
func init() { runtime.LockOSThread() }

func newDriver(ctx context.Context, o options, log *slog.Logger) (server.Driver, func() error, error) {
	d, err := darwin.New(darwin.Config{PowerOff: o.powerOff, Log: log})
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
}

// newDocuments returns the macOS reader of documents: PDFKit,
// NSAttributedString and ImageIO, each read in a child process of the
// agent's own executable.
func newDocuments() (documents.Extractor, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("the agent's executable, for its document reader: %w", err)
	}
	return darwin.Documents{Exe: exe}, func() {}, nil
}

// extractDocument runs the child that reads one document, when the
// agent was started as one (darwin.ExtractFlag first).
func extractDocument(args []string) (int, bool) {
	if len(args) == 0 || args[0] != darwin.ExtractFlag {
		return 0, false
	}
	return darwin.ExtractMain(args[1:], os.Stdout, os.Stderr), true
}

// fdDir lists the process's open descriptors (fdesc(5)).
const fdDir = "/dev/fd"

// harden denies debuggers (ptrace PT_DENY_ATTACH), so that other processes
// of the agent's user cannot attach to it and read the boot key that the
// host's first hello enrolled.
func harden() error {
	if err := unix.PtraceDenyAttach(); err != nil {
		return fmt.Errorf("deny debuggers: %w", err)
	}
	return nil
}

// runPlatform runs serve on another goroutine while the main thread runs the
// Cocoa run loop (NSWorkspace keeps its view of running apps current only
// while it runs).
func runPlatform(serve func() error) error {
	errc := make(chan error, 1)
	go func() {
		errc <- serve()
		darwin.StopMainLoop()
	}()
	darwin.RunMainLoop()
	return <-errc
}
