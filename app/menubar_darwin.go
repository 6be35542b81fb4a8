package main

import (
	"context"
	"log/slog"
	"runtime"

	"fyne.io/systray"
	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos"
	"github.com/progrium/darwinkit/macos/appkit"

	"github.com/hivecrew/hivecrew/app/desktop"
	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
)

// AppKit must run on the main thread: keep main's goroutine on it.
func init() { runtime.LockOSThread() }

// runMenuBar runs the app as an accessory (menu bar only, no Dock icon):
// darwinkit's application delegate starts systray on the shared AppKit run
// loop (RunWithExternalLoop) and registers the kill-switch hotkey. It
// returns when the user quits.
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
	macos.RunApp(func(app appkit.Application, delegate *appkit.ApplicationDelegate) {
		app.SetActivationPolicy(appkit.ApplicationActivationPolicyAccessory)
		delegate.SetApplicationShouldTerminateAfterLastWindowClosed(func(appkit.Application) bool { return false })
		// ⌘C, ⌘V, ⌘Z, ⌘W ... in the web windows go through the main menu.
		desktop.InstallMainMenu(app)
		start()
		go listenKillSwitch(kctx, sc, m, log)
		go func() {
			<-ctx.Done()
			end()
		}()
	})
	return nil
}
