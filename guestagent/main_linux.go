package main

import (
	"context"
	stdlog "log"
	"log/slog"
	"net"
	"strings"

	"github.com/jezek/xgb"
	"github.com/mdlayher/vsock"

	"github.com/hivecrew/hivecrew/guestagent/linux"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

func newDriver(ctx context.Context, o options, log *slog.Logger) (server.Driver, func() error, error) {
	// xgb logs to its own logger (e.g. a missing .Xauthority, which is
	// normal for a sandbox display); route it to ours at debug level.
	xgb.Logger = stdlog.New(slogWriter{log}, "", 0)
	var powerOff []string
	if o.powerOff {
		powerOff = []string{"systemctl", "poweroff"}
	}
	d, err := linux.New(ctx, linux.Config{Display: o.display, PowerOff: powerOff, Log: log})
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
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
