package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/hivecrew/hivecrew/guestagent/darwin"
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
