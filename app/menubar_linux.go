package main

import (
	"context"
	"log/slog"
	"os"

	"fyne.io/systray"

	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
)

// runMenuBar shows the tray menu (StatusNotifierItem) and, on X11, grabs
// the kill-switch shortcut; it returns when the user quits the menu.
func runMenuBar(ctx context.Context, cfg menubar.Config, sc killswitch.Shortcut, log *slog.Logger) error {
	m, err := menubar.New(cfg)
	if err != nil {
		return err
	}
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if os.Getenv("DISPLAY") != "" {
		go listenKillSwitch(kctx, sc, m, log)
	} else {
		log.Warn("no X display: the kill-switch shortcut is not available (Wayland sessions: bind `hivecrew stop-all` to a key in your desktop's settings)")
	}
	go func() {
		<-ctx.Done()
		systray.Quit()
	}()
	systray.Run(m.Ready, m.Exit)
	return nil
}
