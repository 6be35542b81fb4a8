package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
)

// env is what every subcommand works with: the context, the output streams,
// the global flags and the helper's client once connected.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
	// Global flags.
	home string
	json bool
	// cmd and synopsis name the running (sub)command, for its usage.
	cmd, synopsis string

	c     *client.Client
	paths config.Paths
	// in, when set, stands for stdin (tests).
	in io.Reader
}

// stdin is the process's standard input (or the test's).
func (e *env) stdin() io.Reader {
	if e.in != nil {
		return e.in
	}
	return os.Stdin
}

// flags returns the flag set of the running command, with the global flags.
func (e *env) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(e.cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&e.home, "home", e.home, "the data directory `DIR` (default: $"+config.HomeEnv+" or the OS default)")
	fs.BoolVar(&e.json, "json", e.json, "print the API's JSON on stdout")
	return fs
}

// usageOf is the usage text of the running command with fs's flags.
func (e *env) usageOf(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: hivecrew %s\n", e.synopsis)
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		fmt.Fprintf(&b, "  %s%s", dashes, f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "[]" {
			help += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(&b, "\n      %s\n", help)
	})
	return strings.TrimRight(b.String(), "\n")
}

// parse parses args with fs, flags and arguments in any order ("--" ends
// the flags), and returns the positional arguments.
func (e *env) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequest{e.usageOf(fs)}
			}
			return nil, usageError{msg: flagProblem(fs, err), usage: e.usageOf(fs)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagProblem says in words what is wrong with a flag: "--timeout takes a
// whole number of MINUTES, not "0.5"" for the flag package's "invalid
// value "0.5" for flag -timeout: parse error".
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Sprintf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", name)
	}
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	value, rest, _ := strings.Cut(rest, " for flag -")
	name, _, _ := strings.Cut(rest, ":")
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	placeholder, _ := flag.UnquoteUsage(f)
	want := map[string]string{
		"*flag.intValue": "a whole number", "*flag.int64Value": "a whole number", "*flag.uintValue": "a whole number",
		"*flag.float64Value": "a number", "*flag.boolValue": "true or false", "*flag.durationValue": "a duration such as 90s or 5m",
	}[fmt.Sprintf("%T", f.Value)]
	if want == "" {
		return fmt.Sprintf("--%s: %s is not a valid %s", name, value, or(placeholder, "value"))
	}
	if placeholder != "" {
		want += " (" + placeholder + ")"
	}
	return fmt.Sprintf("--%s takes %s, not %s", name, want, value)
}

// parseN parses args and requires exactly n positional arguments.
func (e *env) parseN(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	pos, err := e.parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		msg := fmt.Sprintf("%s takes %d argument(s), got %d", e.cmd, n, len(pos))
		if n == 0 {
			msg = fmt.Sprintf("%s takes no arguments, got %q", e.cmd, strings.Join(pos, " "))
		}
		return nil, usageError{msg: msg, usage: e.usageOf(fs)}
	}
	return pos, nil
}

// bad is a usage error of the running command.
func (e *env) bad(fs *flag.FlagSet, format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...), usage: e.usageOf(fs)}
}

// resolvePaths resolves the data directory from --home, $HIVECREW_HOME or
// the OS default.
func (e *env) resolvePaths() (config.Paths, error) {
	if e.paths.Home != "" {
		return e.paths, nil
	}
	p, err := config.ResolvePaths(e.home)
	if err != nil {
		return p, err
	}
	e.paths = p
	return p, nil
}

// client returns the helper's client, starting the helper when none answers.
func (e *env) client() (*client.Client, error) {
	if e.c != nil {
		return e.c, nil
	}
	paths, err := e.resolvePaths()
	if err != nil {
		return nil, err
	}
	c := client.NewUnix(paths.Socket())
	if err := ensureHelper(e.ctx, c, paths, e.stderr); err != nil {
		return nil, err
	}
	e.c = c
	return c, nil
}

// printJSON writes v as indented JSON on stdout.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONLine writes v as one line of JSON on stdout (for streams).
func (e *env) printJSONLine(v any) error {
	return json.NewEncoder(e.stdout).Encode(v)
}

// out prints a human line on stdout (nothing with --json).
func (e *env) out(format string, args ...any) {
	if !e.json {
		fmt.Fprintf(e.stdout, format+"\n", args...)
	}
}

// notFound says whether err is the helper's "not found".
func notFound(err error) bool { return errors.Is(err, errdefs.ErrNotFound) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
