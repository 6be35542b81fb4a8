package main

import (
	"context"
	"log/slog"
	"runtime"

	"fyne.io/systray"
	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"

	"github.com/hivecrew/hivecrew/app/desktop"
	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
	"github.com/hivecrew/hivecrew/core/macapp"
)

// AppKit must run on the main thread: keep main's goroutine on it.
func init() { runtime.LockOSThread() }

// runMenuBar runs the app as an accessory (menu bar only, no Dock icon):
// its application delegate, every handler set before it is installed
// (macapp.Run), makes the app the notification center's delegate before
// launching ends, then starts systray on the shared AppKit run loop
// (RunWithExternalLoop) and registers the kill-switch hotkey. It returns
// when the user quits.
func runMenuBar(ctx context.Context, cfg menubar.Config, sc killswitch.Shortcut, log *slog.Logger) error {
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.OnQuit = cancel
	m, err := menubar.New(cfg)
	if err != nil {
		return err
	}
	start, end := systray.RunWithExternalLoop(m.Ready, func() {
		m.Exit()
		// systray calls this on the goroutine that ends it; AppKit's
		// terminate: belongs on the main thread.
		dispatch.MainQueue().DispatchAsync(func() { appkit.Application_SharedApplication().Terminate(nil) })
	})
	macapp.Run(func(app appkit.Application, delegate *appkit.ApplicationDelegate) {
		delegate.SetApplicationShouldTerminateAfterLastWindowClosed(func(appkit.Application) bool { return false })
		delegate.SetApplicationWillFinishLaunching(func(foundation.Notification) {
			// Before launching ends: a click on a notification that
			// launched the app is delivered then.
			if err := desktop.HandleNotifications(m.OpenPage); err != nil {
				log.Warn("notifications will not show while Hivecrew is in front nor open their task", "err", err)
			}
		})
		delegate.SetApplicationDidFinishLaunching(func(foundation.Notification) {
			app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
			// ⌘C, ⌘V, ⌘Z, ⌘W ... in the web windows go through the main menu.
			desktop.InstallMainMenu(app)
			start()
			go listenKillSwitch(kctx, sc, m, log)
			go func() {
				<-ctx.Done()
				end()
			}()
		})
	})
	return nil
}
