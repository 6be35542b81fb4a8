// Command hivecrew is the Hivecrew menu-bar app and, with a subcommand, the
// command-line client of the helper. It is a thin client: it never owns a VM
// and never reads an LLM API key. Every subcommand talks to the helper over
// its unix socket (core/client) and starts the helper when none answers.
//
//	hivecrew                      the menu-bar app
//	hivecrew run "<task>" [--wait | --follow] ...
//	hivecrew ls | show | logs | pause | resume | say | cancel | rerun ...
//	hivecrew providers | templates | vms | schedules | apikey | devices ...
//	hivecrew status | version | help [COMMAND]
//
// Each subcommand lives in its own file, cmd_<name>.go. Exit codes: 0 ok,
// 1 error, 2 usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hivecrew/hivecrew/core/redact"
)

// command is one entry of a dispatch table.
type command struct {
	name    string
	args    string // the synopsis after the name
	summary string
	run     func(e *env, args []string) error
}

// commands is the top-level dispatch table, in the order usage lists them.
// It is built by a function so that the help command can refer to it.
func commands() []command {
	return []command{
		{"run", `"<task>" [--wait | --follow] [flags]`, "run a task in a new VM", cmdRun},
		{"ls", "[--status S,S] [--limit N] [--all]", "list tasks, newest first", cmdLs},
		{"show", "ID", "show a task's details", cmdShow},
		{"logs", "[-f] ID", "print a task's activity (-f: follow it to the end)", cmdLogs},
		{"pause", "ID", "pause a running task", cmdPause},
		{"files", "ID [--get NAME]... [--all] [-o DIR]", "list a task's files, or download its outputs", cmdFiles},
		{"resume", "ID [--instructions TEXT] [--steps N] [--minutes M]", "resume a paused task (more steps or time for one held at its limit)", cmdResume},
		{"say", `ID "<instructions>"`, "give a running task more instructions", cmdSay},
		{"cancel", "ID", "cancel a task", cmdCancel},
		{"rm", "[--force] ID", "delete a task, its activity, files and traces (--force: cancel it first)", cmdRm},
		{"rerun", "ID [--provider P] [--model M]", "run a finished task again (on another model)", cmdRerun},
		{"rename", `ID "<title>"`, "rename a task", cmdRename},
		{"answer", `ID "<answer>"`, "answer a task's pending question", cmdAnswer},
		{"approve", "ID", "allow a task's pending tool call", cmdApprove},
		{"deny", "ID", "refuse a task's pending tool call", cmdDeny},
		{"plan", "show|approve|edit|cancel ID", "review the plan of a plan-first task", cmdPlan},
		{"review", "ID [--approve | --discard] [PATH]...", "review a task's changes to its host folders (run --folder)", cmdReview},
		{"stop-all", "", "kill switch: stop every running and paused task", cmdStopAll},
		{"export", "ID [--format html|md|json] [-o FILE]", "export a task's session", cmdExport},
		{"providers", "add|ls|show|edit|rm|test|models ...", "manage LLM providers", cmdProviders},
		{"credentials", "add|edit|import|ls|rm ...", "manage logins the agent types without seeing them", cmdCredentials},
		{"provision", "show|set ...", "manage what VMs are given before their agent starts (variables, files, setup commands)", cmdProvision},
		{"mcp", "add|edit|ls|check|on|off|rm ...", "manage the MCP servers whose tools the agent is offered", cmdMCP},
		{"webhooks", "add|ls|test|rm ...", "manage the webhooks told when a task ends or needs you", cmdWebhooks},
		{"skills", "ls|show|import|on|off|rm|draft ...", "manage the skill library", cmdSkills},
		{"templates", "ls|create|seal|edit|default|rm|log ...", "build and manage VM templates", cmdTemplates},
		{"vms", "ls|stop|rm|rebuild ...", "list, stop and rebuild VMs", cmdVMs},
		{"schedules", "add|ls|edit|on|off|rm|run ...", "manage scheduled tasks", cmdSchedules},
		{"presets", "add|save|ls|show|rename|rm|run ...", "saved tasks to launch by name", cmdPresets},
		{"eval", "run|report ...", "measure models on a suite of checked tasks", cmdEval},
		{"apikey", "create|ls|revoke ...", "manage API keys of the REST API", cmdAPIKey},
		{"devices", "pending|approve|deny|ls|rm ...", "answer devices asking to pair, and revoke paired ones", cmdDevices},
		{"settings", "[show [KEY]... | set KEY=VALUE...]", "show or change the helper's settings", cmdSettings},
		{"open", "[--print]", "open the web UI in a browser", cmdOpen},
		{"status", "", "is the helper running, and what is it doing?", cmdStatus},
		{"version", "", "print the version", cmdVersion},
		{"help", "[COMMAND]", "show help", cmdHelp},
	}
}

// usage is the top-level usage text.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: hivecrew [--home DIR] [--json] COMMAND [ARGS]\n       hivecrew            (no command: the menu-bar app)\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nEvery command takes --home DIR (default: $HIVECREW_HOME or the OS default)\n")
	b.WriteString("and --json (print the API's JSON on stdout). `hivecrew help COMMAND` shows a command's flags.")
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the CLI with args (without the program name) and returns the
// exit code: 0 ok, 1 error, 2 usage (130 when interrupted). Errors go to
// stderr as "hivecrew: <message>".
func run(args []string, stdout, stderr io.Writer) int { return runWith(args, nil, stdout, stderr) }

// runWith is run with stdin (nil: the process's).
func runWith(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args = dropProcessSerialNumber(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// What the helper sends back (a guest's file names, a model's words, a
	// diff of a guest's file) reaches the terminal through the printable
	// filter: no escape sequence acts on it, no bidirectional override
	// reorders it. --json output means the same after it.
	out := redact.NewWriter(stdout)
	defer out.Flush()
	e := &env{ctx: ctx, stdout: out, stderr: stderr, in: stdin}
	err := e.dispatch(args)
	var (
		u    usageError
		h    helpRequest
		code exitCode
	)
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil:
		// Interrupted: say what goes on unless it is only the interruption.
		if !errors.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "hivecrew:", redact.PrintableText(err.Error()))
		}
		return 130
	case errors.As(err, &h):
		fmt.Fprintln(stdout, h.usage)
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &u):
		// One line says what is wrong; the usage is a command away.
		fmt.Fprintln(stderr, "hivecrew:", u.msg)
		if e.cmd != "" && e.cmd != "help" {
			fmt.Fprintf(stderr, "(`hivecrew help %s` lists its flags)\n", e.cmd)
		} else {
			fmt.Fprintln(stderr, or(u.usage, usage()))
		}
		return 2
	}
	fmt.Fprintln(stderr, "hivecrew:", redact.PrintableText(humanize(err.Error())))
	return 1
}

// apiWords are the API's field names and statuses in the helper's errors,
// and what people call them.
var apiWords = strings.NewReplacer(
	"providerName ", "provider ", "templateId ", "template ", "modelId ", "model ",
	"outputDirectory ", "output folder ", "maxIterations ", "step limit ", "timeoutMinutes ", "time limit ",
	"networkMode ", "network mode ", "reasoningEffort ", "reasoning effort ",
	" timedOut", " timed out", " maxIterations", " out of steps", " waitingForVM", " waiting for a VM",
	" planReview", " waiting for plan review", " planFailed", " planning failed",
)

// humanize says an error of the helper's in the CLI's words.
func humanize(msg string) string { return apiWords.Replace(msg) }

// dropProcessSerialNumber removes the -psn_<n>_<n> argument that
// LaunchServices may add when the Finder opens the app (the first launch
// of a downloaded Hivecrew.app, among others): it is not the user's, and
// the app would exit with a usage error instead of showing its menu.
func dropProcessSerialNumber(args []string) []string {
	out := args[:0:0]
	for _, a := range args {
		if strings.HasPrefix(a, "-psn_") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// dispatch parses the global flags before the command and runs it.
func (e *env) dispatch(args []string) error {
	args, err := e.leadingFlags(args, usage())
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return cmdMenuBar(e, nil) // the menu-bar app
	}
	return runTable(e, "", commands(), args)
}

// leadingFlags parses the global flags that come before a command
// (hivecrew --home X ls, hivecrew providers --json ls) and returns the rest.
func (e *env) leadingFlags(args []string, usageText string) ([]string, error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		if args[0] == "--" {
			return args[1:], nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		switch name {
		case "home":
			if !hasValue {
				if len(args) < 2 {
					return nil, usageError{msg: "flag needs an argument: --home", usage: usageText}
				}
				value, args = args[1], args[1:]
			}
			e.home = value
		case "json":
			e.json = !hasValue || value == "true"
		case "h", "help":
			return nil, helpRequest{usageText}
		case "version":
			if e.cmd == "" {
				return nil, cmdVersion(e, nil)
			}
			fallthrough
		default:
			return nil, usageError{msg: fmt.Sprintf("unknown flag %s (global flags: --home DIR, --json)", args[0]), usage: usageText}
		}
		args = args[1:]
	}
	return args, nil
}

// runTable finds args[0] in table and runs it; group names the parent
// command ("" at the top level).
func runTable(e *env, group string, table []command, args []string) error {
	groupUsage := usage()
	if group != "" {
		groupUsage = tableUsage(group, table)
		var err error
		if args, err = e.leadingFlags(args, groupUsage); err != nil {
			return err
		}
	}
	if len(args) == 0 {
		return usageError{msg: group + ": a subcommand is required", usage: groupUsage}
	}
	for _, c := range table {
		if c.name == args[0] {
			e.cmd = strings.TrimSpace(group + " " + c.name)
			e.synopsis = strings.TrimSpace(e.cmd + " " + c.args)
			return c.run(e, args[1:])
		}
	}
	if args[0] == "help" {
		return helpRequest{groupUsage}
	}
	what := "command"
	if group != "" {
		what = group + " subcommand"
	}
	return usageError{msg: fmt.Sprintf("unknown %s %q", what, args[0]), usage: groupUsage}
}

// tableUsage is the usage of a command group.
func tableUsage(group string, table []command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage:\n")
	for _, c := range table {
		fmt.Fprintf(&b, "  %s\n", strings.TrimSpace("hivecrew "+group+" "+c.name+" "+c.args))
	}
	b.WriteString("\n`hivecrew " + group + " SUBCOMMAND -h` shows its flags.")
	return b.String()
}

// usageError is a command line that does not fit: exit code 2.
type usageError struct{ msg, usage string }

func (u usageError) Error() string { return u.msg }

// helpRequest asks for usage on stdout: exit code 0.
type helpRequest struct{ usage string }

func (h helpRequest) Error() string { return "help requested" }

// exitCode ends the CLI with a code and no message (the command printed
// what there was to say).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }
