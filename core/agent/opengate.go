package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// openJudgement is the permission an open_app or open_file call needs:
// gate is the policy name that decides it, what says the call in words,
// details is what the permission request shows (the call's arguments and
// what it starts, as "runs"), and askAnyway turns an "allow" into "ask".
type openJudgement struct {
	gate, what, details string
	askAnyway           bool
}

// openGate judges an open_app or open_file call by what it would start
// (terminal.go): it asks the guest (resolve_app) and judges the answer.
// A guest without resolve_app gets the check by name of earlier versions,
// and the task is told so once.
func (r *Runner) openGate(ctx context.Context, step int, tool string, args map[string]any, raw string) (openJudgement, error) {
	j := openJudgement{gate: tool, what: tool, details: raw}
	policy := r.task.Policy
	if policy.For(tool) == config.Allow && policy.For(config.OpenTerminal) == config.Allow {
		return j, nil // everything opens without asking: nothing to tell apart
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	given, file := str("name"), ""
	if tool == protocol.MethodOpenFile {
		given, file = str("app"), str("path")
	}
	var v verdict
	if slices.Contains(r.cfg.Guest.Hello().Capabilities, protocol.CapResolveApp) {
		var res protocol.ResolvedApp
		err := r.cfg.Guest.Call(ctx, protocol.MethodResolveApp, protocol.ResolveAppParams{App: given, Path: file}, &res)
		switch {
		case err != nil && (ctx.Err() != nil || errors.Is(err, errdefs.ErrNotFound)):
			return j, err // stopped, or no such file: as open_file would answer
		case err != nil:
			v = verdict{runsCode, "what it starts could not be told: " + truncate(err.Error(), 200)}
		default:
			v = judgeOpen(tool, given, file, res)
		}
	} else {
		r.namesOnly.Do(func() {
			r.emit(step, Event{Type: "status_change", ActivityType: "info", Summary: "This VM's guest agent cannot say what an app name runs " +
				"(it is older than resolve_app): open_app and open_file are judged by the names they are given only. Rebuild the template to update it."})
		})
		if target, ok := opensTerminal(tool, args); ok {
			v = verdict{runsCode, fmt.Sprintf("names a terminal, a shell, an interpreter or a script: %q, judged by its name only: this guest agent cannot say what it runs", truncate(target, 200))}
		}
	}
	switch v.class {
	case notFound:
		return j, fmt.Errorf("%s: no application named %q in the VM (give a desktop-file id, an application name or a program)", tool, truncate(given, 100))
	case runsCode:
		// open_terminal's permission, unless the tool's own asks where
		// open_terminal allows: the stricter decides.
		if policy.For(tool) != config.Ask || policy.For(config.OpenTerminal) != config.Allow {
			j.gate = config.OpenTerminal
		}
	case otherApp:
		j.askAnyway = policy.For(config.OpenTerminal) != config.Allow
	}
	if v.why != "" {
		j.what = fmt.Sprintf("%s (%s)", tool, v.why)
		shown := maps.Clone(args)
		shown["runs"] = v.why // the tools' schemas refuse a "runs" of the model's
		j.details = jsonText(shown)
	}
	return j, nil
}

// jsonText encodes a decoded JSON object again, as written (no HTML
// escapes).
func jsonText(v map[string]any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
