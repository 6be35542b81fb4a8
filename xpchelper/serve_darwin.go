package main

import (
	"context"
	"runtime"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/macapp"
)

// AppKit runs on the main thread: keep main's goroutine on it.
func init() { runtime.LockOSThread() }

// serve runs the helper with an accessory NSApplication on the main thread
// (no Dock icon, no menu): the VM takeover windows (VZVirtualMachineView)
// must live in the process that owns the VMs. The app ends when the helper
// does. A logout (or any terminate:) stops the helper gracefully first:
// applicationShouldTerminate: answers "later" until it has (terminationGate).
// Every handler is set before the delegate is installed (macapp.Run):
// AppKit may never ask a handler set later.
func serve(ctx context.Context, cfg daemon.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var gate terminationGate
	errc := make(chan error, 1)
	macapp.Run(func(app appkit.Application, delegate *appkit.ApplicationDelegate) {
		delegate.SetApplicationShouldTerminateAfterLastWindowClosed(func(appkit.Application) bool { return false })
		delegate.SetApplicationShouldTerminate(func(appkit.Application) appkit.ApplicationTerminateReply {
			later, begin := gate.ask()
			if !later {
				return appkit.TerminateNow
			}
			if begin {
				cfg.Log.Info("macOS asks the helper to quit (logout, restart or Quit): stopping the agents first")
				cancel() // daemon.Run stops gracefully and returns
			}
			return appkit.TerminateLater
		})
		delegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
			app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
			go runHelper(ctx, app, cfg, &gate, errc)
		})
	})
	return <-errc
}

// runHelper runs the helper until ctx ends, then ends the app: it answers a
// pending terminate: (the gate), or stops the run loop.
func runHelper(ctx context.Context, app appkit.Application, cfg daemon.Config, gate *terminationGate, errc chan<- error) {
	err := daemon.Run(ctx, cfg)
	if err != nil {
		cfg.Log.Error("helper stopped", "err", err)
	}
	errc <- err
	dispatch.MainQueue().DispatchAsync(func() {
		if gate.finished() {
			// AppKit waits for this answer, then exits the process.
			app.ReplyToApplicationShouldTerminate(true)
			return
		}
		// Stop the run loop (not Terminate, which exits at once):
		// Stop takes effect after the next event, so post one.
		app.Stop(nil)
		ev := appkit.Event_OtherEventWithTypeLocationModifierFlagsTimestampWindowNumberContextSubtypeData1Data2(
			appkit.EventTypeApplicationDefined, foundation.Point{}, 0, 0, 0, nil, 0, 0, 0)
		app.PostEventAtStart(ev, true)
	})
}
