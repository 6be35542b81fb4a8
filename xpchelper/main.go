// Command hivecrew-helper is the Hivecrew helper daemon: the headless core
// that owns the store, the VMs, the task queue and the agents, and serves the
// REST API and the web UI.
//
//	hivecrew-helper serve [--home DIR] [--addr 127.0.0.1:5482] [--socket PATH] [--print-api-key]
//	hivecrew-helper stop  [--home DIR]
//	hivecrew-helper paths [--home DIR]   (where this helper finds its files)
//	hivecrew-helper version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/version"
)

const usage = `usage:
  hivecrew-helper serve [--home DIR] [--addr HOST:PORT] [--socket PATH] [--print-api-key] [--log-level LEVEL] [--guest-agent PATH] [--web-step-up DURATION]
  hivecrew-helper stop  [--home DIR]
  hivecrew-helper paths [--home DIR]
  hivecrew-helper version`

// errHelp is --help, answered: exit 0.
var errHelp = errors.New("help")

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, errHelp) {
		fmt.Fprintln(os.Stderr, "hivecrew-helper:", err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"a command is required"}
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are said once, by main; --help prints to stdout
	fs.Usage = func() {}
	parse := func(args []string) error {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "usage: hivecrew-helper %s [flags]\n", cmd)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return errHelp
		}
		if err != nil {
			return usageError{err.Error()}
		}
		return nil
	}
	home := fs.String("home", "", "data directory (default: $"+config.HomeEnv+" or the OS default)")
	switch cmd {
	case "serve":
		addr := fs.String("addr", "", "TCP listen address (default 127.0.0.1:<apiPort setting, 5482>)")
		socket := fs.String("socket", "", "unix socket path (default <home>/helper.sock)")
		printKey := fs.Bool("print-api-key", false, "replace the \"make run\" API key and print the new one")
		level := fs.String("log-level", "info", "debug, info, warn or error")
		agent := fs.String("guest-agent", "", "guest agent binary for sandboxes (default: hivecrew-guestagent next to this binary)")
		profile := fs.String("cpu-profile", "", "write a CPU profile (go tool pprof) to this file until the helper stops")
		stepUp := fs.Duration("web-step-up", 0, "how long after its login link a web session may change API keys, providers and safety settings (default 10m)")
		pairingTTL := fs.Duration("pairing-ttl", 0, "how long a device's pairing code waits for the user (default 5m)")
		if err := parse(args); err != nil {
			return err
		}
		if *profile != "" {
			stopProfile, err := startCPUProfile(*profile)
			if err != nil {
				return err
			}
			defer stopProfile()
		}
		var lv slog.Level
		if err := lv.UnmarshalText([]byte(*level)); err != nil {
			return usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", *level)}
		}
		paths, err := config.ResolvePaths(*home)
		if err != nil {
			return err
		}
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, daemon.Config{
			Paths: paths, Addr: *addr, Socket: *socket, PrintAPIKey: *printKey, Stdout: stdout, Log: log, GuestAgent: *agent, WebStepUp: *stepUp, PairingTTL: *pairingTTL,
		})
	case "stop":
		if err := parse(args); err != nil {
			return err
		}
		paths, err := config.ResolvePaths(*home)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.NewUnix(paths.Socket()).Shutdown(ctx); err != nil {
			return fmt.Errorf("stop the helper for %s: %w", paths.Home, err)
		}
		fmt.Fprintln(stdout, "helper stopping")
		return nil
	case "paths":
		agent := fs.String("guest-agent", "", "guest agent binary (default: found next to this binary or in Hivecrew.app)")
		if err := parse(args); err != nil {
			return err
		}
		paths, err := config.ResolvePaths(*home)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "data:        %s\nsocket:      %s\n", paths.Home, paths.Socket())
		p, err := daemon.GuestAgentPath(daemon.Config{GuestAgent: *agent})
		if err != nil {
			fmt.Fprintf(stdout, "guest agent: none (%v)\n", err)
			return err
		}
		fmt.Fprintf(stdout, "guest agent: %s\n", p)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, "hivecrew-helper", version.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}
