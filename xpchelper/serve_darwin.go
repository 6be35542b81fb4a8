package main

import (
	"context"
	"runtime"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"

	"github.com/hivecrew/hivecrew/core/daemon"
)

// AppKit runs on the main thread: keep main's goroutine on it.
func init() { runtime.LockOSThread() }

// serve runs the helper with an accessory NSApplication on the main thread
// (no Dock icon, no menu): the VM takeover windows (VZVirtualMachineView)
// must live in the process that owns the VMs. The app ends when the helper
// does. A logout (or any terminate:) stops the helper gracefully first:
// applicationShouldTerminate: answers "later" until it has (terminationGate).
func serve(ctx context.Context, cfg daemon.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var gate terminationGate
	errc := make(chan error, 1)
	macos.RunApp(func(app appkit.Application, delegate *appkit.ApplicationDelegate) {
		app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
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
		go func() {
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
		}()
	})
	return <-errc
}
