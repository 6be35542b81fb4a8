package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Provisioning (issue 20). Before the first step the runner gives the VM
// its provisioned variables (~/.hivecrew-env.sh, sourced by the shells'
// profiles), moves its staged files into place and runs its setup commands
// in order; a command that fails or times out fails the task with its
// output. Every run_shell the model calls then gets the variables in its
// env. A secret variable's value is redacted from whatever the guest shows
// back, as a typed credential is, and appears as "[secret: provisioned
// NAME]" in the trace.

// setupOutputBytes bounds the output of a failed setup command in the
// task's result (its control characters shown, not acted on: the guest
// chose them).
const setupOutputBytes = 2000

// provision applies the configured plan; ok is false when the task ends
// here, with res.
func (r *Runner) provision(ctx context.Context) (res Result, ok bool) {
	p := r.cfg.Provision
	if p.Empty() || r.task.Host { // no VM, nothing to provision
		return Result{}, true
	}
	var listed []string
	for _, v := range p.Env {
		if v.Secret {
			r.redactor.Add(v.Value, "provisioned "+v.Name)
		}
		listed = append(listed, v.Name+"="+v.Value)
	}
	r.env = p.EnvMap()
	for _, f := range p.Files {
		listed = append(listed, fmt.Sprintf("file %s (%04o)", f.GuestPath, f.Mode))
	}
	for _, c := range p.Commands {
		listed = append(listed, "setup: "+truncate(c.Command, 1000)) // an eval's setup writes whole files
	}
	r.emit(0, Event{Type: "status_change", ActivityType: "info",
		Summary: fmt.Sprintf("Provisioning the VM: %d variable(s), %d file(s), %d setup command(s)", len(p.Env), len(p.Files), len(p.Commands)),
		Details: r.redactor.Redact(strings.Join(listed, "\n"))})
	if err := r.applyProvision(ctx, r.cfg.Guest); err != nil {
		if ctx.Err() != nil {
			return ended(ctx), false
		}
		no := false
		return Result{Status: store.StatusFailed, Summary: err.Error(), Success: &no}, false
	}
	return Result{}, true
}

// Reprovision gives the plan to a fresh VM through g before the task goes
// on in it (a held task's replacement VM: vmhold.go in the orchestrator),
// its files already staged in its shared folder. Its error is in words,
// secrets redacted.
func (r *Runner) Reprovision(ctx context.Context, g Caller) error {
	if r.cfg.Provision.Empty() {
		return nil
	}
	return r.applyProvision(ctx, g)
}

// Caller calls guest methods.
type Caller interface {
	Call(ctx context.Context, method string, params, result any) error
}

// applyProvision writes the variables' file, moves the staged files into
// place and runs the setup commands through g. Its error says which step
// failed and why, with the command's output, secrets redacted; it is also
// in the activity.
func (r *Runner) applyProvision(ctx context.Context, g Caller) error {
	p := r.cfg.Provision
	step := r.Steps()
	fail := func(summary string) error {
		summary = r.redactor.Redact(summary)
		if ctx.Err() == nil {
			r.emit(step, Event{Type: "status_change", ActivityType: "error", Summary: firstLine(summary), Details: summary})
		}
		return errors.New(summary)
	}
	shell := func(command string, env map[string]string, timeoutSeconds float64) (protocol.ShellResult, error) {
		var out protocol.ShellResult
		all := maps.Clone(r.env)
		if all == nil {
			all = map[string]string{}
		}
		maps.Copy(all, env)
		err := g.Call(ctx, protocol.MethodRunShell, protocol.ShellParams{Command: command, Env: all, TimeoutSeconds: timeoutSeconds}, &out)
		return out, err
	}
	if len(p.Env) > 0 {
		res, err := shell(provision.InstallEnvCommand, map[string]string{provision.EnvFileVar: provision.EnvFile(p)}, 60)
		if err != nil || res.ExitCode != 0 {
			return fail("Provisioning failed: the variables could not be written to ~/.hivecrew-env.sh: " + shellProblem(res, err))
		}
	}
	for i, f := range p.Files {
		res, err := shell(provision.PlaceFileCommand, map[string]string{provision.SourceVar: provision.StagedName(i),
			provision.DestVar: f.GuestPath, provision.ModeVar: fmt.Sprintf("%04o", f.Mode)}, 120)
		if err != nil || res.ExitCode != 0 {
			return fail(fmt.Sprintf("Provisioning failed: the file for %s could not be put in place: %s", f.GuestPath, shellProblem(res, err)))
		}
	}
	if len(p.Files) > 0 {
		shell(provision.ClearStageCommand, nil, 60) // an empty folder left over is harmless
	}
	for i, c := range p.Commands {
		r.emit(step, Event{Type: "status_change", ActivityType: "info",
			Summary: fmt.Sprintf("Setup command %d of %d: %s", i+1, len(p.Commands), firstLine(r.redactor.Redact(c.Command)))})
		res, err := shell(c.Command, nil, c.Timeout.Seconds())
		if err != nil || res.ExitCode != 0 || res.TimedOut {
			return fail(fmt.Sprintf("Setup command %d of %d failed: %s\n$ %s\n%s", i+1, len(p.Commands), shellProblem(res, err),
				truncate(c.Command, 500), files.PrintableText(tail(r.redactor.Redact(strings.TrimSpace(res.Stdout+"\n"+res.Stderr)), setupOutputBytes))))
		}
	}
	return nil
}

// shellProblem says why a provisioning command did not succeed.
func shellProblem(res protocol.ShellResult, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case res.TimedOut:
		return "it timed out"
	}
	return "exit status " + strconv.Itoa(res.ExitCode)
}

// tail keeps the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "… " + s[len(s)-n:]
}

// withEnv adds the provisioned variables to a run_shell call's arguments
// (over any the model gave of the same names).
func (r *Runner) withEnv(args map[string]any) {
	if len(r.env) == 0 {
		return
	}
	env := map[string]any{}
	if given, ok := args["env"].(map[string]any); ok {
		maps.Copy(env, given)
	}
	for k, v := range r.env {
		env[k] = v
	}
	args["env"] = env
}

// clampTimeout keeps a run_shell call's timeoutSeconds within the guest's
// limit (the guest clamps it too) and, when it was over, returns a note
// for the model saying what ran.
func clampTimeout(args map[string]any) string {
	secs, ok := args["timeoutSeconds"].(float64)
	if !ok || secs <= protocol.MaxShellTimeoutSeconds {
		return ""
	}
	args["timeoutSeconds"] = float64(protocol.MaxShellTimeoutSeconds)
	return fmt.Sprintf("Note: timeoutSeconds %g is over the limit of %d; the command ran with a limit of %d seconds.",
		secs, protocol.MaxShellTimeoutSeconds, protocol.MaxShellTimeoutSeconds)
}
