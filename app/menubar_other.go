//go:build !linux && !darwin

package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hivecrew/hivecrew/app/killswitch"
	"github.com/hivecrew/hivecrew/app/menubar"
)

func runMenuBar(ctx context.Context, cfg menubar.Config, sc killswitch.Shortcut, log *slog.Logger) error {
	return errors.New("the menu-bar app runs on macOS and Linux; the CLI works everywhere")
}
