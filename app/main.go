// Command hivecrew is the Hivecrew menu-bar app and, with a subcommand, the
// command-line client of the helper. It is a thin client: it never owns a VM
// and never reads an LLM API key.
//
//	hivecrew status [--home DIR]
//	hivecrew version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/version"
)

const usage = `usage:
  hivecrew status [--home DIR]   is the helper running and healthy?
  hivecrew version`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hivecrew:", err)
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

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"a command is required"}
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := fs.String("home", "", "data directory (default: $"+config.HomeEnv+" or the OS default)")
	switch cmd {
	case "status":
		if err := fs.Parse(args); err != nil {
			return usageError{err.Error()}
		}
		paths, err := config.ResolvePaths(*home)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := client.NewUnix(paths.Socket()).Health(ctx); err != nil {
			return fmt.Errorf("helper for %s: %w", paths.Home, err)
		}
		fmt.Fprintf(stdout, "helper running (data directory %s)\n", paths.Home)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, "hivecrew", version.Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}
