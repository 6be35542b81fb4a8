package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
)

// Host tools (issue 19) run on the host, not in the guest: an MCP server's
// tools, web search and reading, skills, subagents. The orchestrator makes
// them for a task; the runner offers them next to the guest tools, gates
// each by the tool policy, bounds it in time and size, and traces its call
// and result as it does a guest tool's. What they answer comes from outside
// (a web page, an MCP server) and is as untrusted as the guest's words: it
// reaches the model as a tool result, redacted and capped, never as an
// instruction of the user's.

// HostTool is one tool the host runs.
type HostTool struct {
	// Name is the function name the model sees (^[A-Za-z0-9_-]{1,64}$).
	Name        string
	Description string
	// Params is the JSON schema of the arguments (an object); nil for none.
	Params json.RawMessage
	// Gate is the policy name that allows, asks or denies it (default:
	// Name); Default applies when the task's policy does not name Gate.
	Gate    string
	Default config.Permission
	// Timeout bounds a call (default 2 minutes).
	Timeout time.Duration
	// Run carries out a call; args are the model's, checked against Params.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
}

// hostToolMax caps what a host tool's answer may put in the conversation.
const hostToolMax = 16000

// hostToolTimeout is a call's bound when the tool sets none.
const hostToolTimeout = 2 * time.Minute

// validToolName is OpenAI's rule for function names.
func validToolName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

// hostTool is a HostTool ready to be offered: its schema resolved.
type hostTool struct {
	HostTool
	schema *jsonschema.Resolved
}

// prepareHostTools checks the host tools and resolves their schemas; a tool
// with a bad name or schema (an MCP server's, say) is left out and said.
func prepareHostTools(ts []HostTool) (map[string]*hostTool, []string) {
	out := map[string]*hostTool{}
	var problems []string
	for _, t := range ts {
		if !validToolName(t.Name) {
			problems = append(problems, fmt.Sprintf("tool %q left out: not a valid function name", truncate(t.Name, 80)))
			continue
		}
		if _, dup := out[t.Name]; dup || argSchemas[t.Name] != nil || elementGates[t.Name] != nil {
			problems = append(problems, fmt.Sprintf("tool %q left out: the name is taken", t.Name))
			continue
		}
		if len(t.Params) == 0 {
			t.Params = json.RawMessage(noArgs)
		}
		var sch jsonschema.Schema
		if err := json.Unmarshal(t.Params, &sch); err != nil {
			problems = append(problems, fmt.Sprintf("tool %q left out: its argument schema is not JSON schema: %v", t.Name, err))
			continue
		}
		// A schema this package cannot resolve (a remote $ref, a draft it
		// does not know) leaves the checking to the tool's own side.
		r, _ := sch.Resolve(nil)
		if t.Gate == "" {
			t.Gate = t.Name
		}
		if t.Default == "" {
			t.Default = config.Allow
		}
		if t.Timeout <= 0 {
			t.Timeout = hostToolTimeout
		}
		out[t.Name] = &hostTool{HostTool: t, schema: r}
	}
	return out, problems
}

// permission is the policy for a host tool: the task's, or its default.
func (r *Runner) permission(t *hostTool) config.Permission {
	if p, ok := r.task.Policy.Lookup(t.Gate); ok {
		return p
	}
	return t.Default
}

// hostToolDefs are the function definitions of the host tools not denied.
func (r *Runner) hostToolDefs() []llm.Tool {
	var out []llm.Tool
	for _, name := range slices.Sorted(maps.Keys(r.hostTools)) {
		t := r.hostTools[name]
		if r.permission(t) == config.Deny {
			continue
		}
		out = append(out, llm.Tool{Name: t.Name, Description: truncate(t.Description, 1024), Parameters: t.Params})
	}
	return out
}

// callHost runs a host tool. A panic in it (a bug, or a library meeting a
// page or an MCP answer made to break it) is the call's error, logged with
// its stack; the helper and the task go on.
func (r *Runner) callHost(ctx context.Context, t *hostTool, raw json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.cfg.Log.Error("host tool panicked", "task", r.task.ID, "tool", t.Name, "panic", p, "stack", string(debug.Stack()))
			out, err = "", fmt.Errorf("%s failed (an internal error, logged by the helper)", t.Name)
		}
	}()
	return t.Run(ctx, raw)
}

// runHost carries out a call to a host tool: its arguments checked, the
// user asked if the policy says so, bounded in time, its answer capped.
func (r *Runner) runHost(ctx context.Context, step int, t *hostTool, raw json.RawMessage) (string, error) {
	var args any
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", fmt.Errorf("%s: the arguments are not JSON: %s", t.Name, truncate(string(raw), 200))
	}
	if _, ok := args.(map[string]any); !ok {
		return "", fmt.Errorf("%s: the arguments are not a JSON object: %s", t.Name, truncate(string(raw), 200))
	}
	if t.schema != nil { // nil: checked by the tool's own side
		if err := t.schema.Validate(args); err != nil {
			return "", fmt.Errorf("%s: %s", t.Name, truncate(strings.TrimPrefix(err.Error(), "validating root: "), 300))
		}
	}
	switch r.permission(t) {
	case config.Deny:
		return "", fmt.Errorf("%s is not allowed for this task", t.Name)
	case config.Ask:
		what := t.Name
		if t.Gate != t.Name {
			what = fmt.Sprintf("%s (%s)", t.Name, t.Gate)
		}
		r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve " + what + "?", Details: truncate(string(raw), 4000)})
		ok, _, err := r.ctl.requestPermission(ctx, t.Gate, string(raw))
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("the user denied %s", what)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	out, err := r.callHost(cctx, t, raw)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%s did not answer within %s", t.Name, t.Timeout)
	}
	if err != nil {
		return "", err
	}
	if len(out) > hostToolMax {
		out = out[:hostToolMax] + fmt.Sprintf("\n… [cut: the answer was %d bytes, %d are shown]", len(out), hostToolMax)
	}
	if out == "" {
		out = "Done."
	}
	return out, nil
}
