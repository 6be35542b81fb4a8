package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/hivecrew/hivecrew/app/desktop"
	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
)

// cmdMenuBar is `hivecrew` without a command: the menu-bar app. It starts
// the helper if none runs (as a service — launchd on macOS, systemd --user
// on Linux — for the default data directory, else as a child process),
// shows the menu and listens for the kill-switch shortcut. Quitting it
// leaves the helper and its agents running.
func cmdMenuBar(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	paths, err := e.resolvePaths()
	if err != nil {
		return err
	}
	if problem := desktop.SessionBusProblem(); problem != "" {
		// Not a crash: the helper and its agents are unaffected.
		log.Warn("the menu-bar icon cannot be shown: " + problem + "; the helper keeps running — use `hivecrew open` for the dashboard")
		return exitCode(1)
	}
	c, err := e.menuBarClient(paths, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	settings, err := c.Settings(ctx)
	cancel()
	if err != nil {
		return err
	}
	sc, err := killswitch.Parse(settings.KillSwitchShortcut)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	app, _ := os.Executable()
	cfg := menubar.Config{
		Client: c, Open: desktop.Open, Notify: desktop.Notify, Shortcut: sc.Symbols(runtime.GOOS == "darwin"),
		StartAtLogin: desktop.Autostart{App: app}, Log: log,
	}
	return runMenuBar(e.ctx, cfg, sc, log)
}

// menuBarClient connects to the helper, starting it as a service when it
// serves the default data directory.
func (e *env) menuBarClient(paths config.Paths, log *slog.Logger) (*client.Client, error) {
	c := client.NewUnix(paths.Socket())
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
	healthy := c.Health(ctx) == nil
	cancel()
	if !healthy && e.home == "" && os.Getenv(config.HomeEnv) == "" {
		if bin, err := findHelper(); err == nil {
			started, err := desktop.StartHelperService(bin)
			if err != nil {
				log.Warn("could not start the helper as a service; starting it directly", "err", err)
			}
			if started {
				wctx, wcancel := context.WithTimeout(e.ctx, helperStartTimeout)
				err := c.WaitHealthy(wctx)
				wcancel()
				if err == nil {
					e.c = c
					return c, nil
				}
				log.Warn("the helper service did not answer; starting it directly", "err", err)
			}
		}
	}
	return e.client()
}

// listenKillSwitch runs the global shortcut until ctx ends; it logs (and
// the menu keeps working) when the shortcut cannot be grabbed.
func listenKillSwitch(ctx context.Context, sc killswitch.Shortcut, m *menubar.Menu, log *slog.Logger) {
	if err := killswitch.Listen(ctx, "", sc, m.StopAll); err != nil {
		log.Warn("the kill-switch shortcut is not available; use Stop All Agents in the menu", "shortcut", sc.Symbols(runtime.GOOS == "darwin"), "err", err)
	}
}
