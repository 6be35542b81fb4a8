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
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// outcome is what one tool call came to.
type outcome struct {
	text    string
	isError bool
	// image is the screen a native call shows the model (a screenshot, a
	// zoom); ran says the call was carried out (a native call's result
	// then shows the screen after it); acked are the safety checks the
	// user approved.
	image *llm.Image
	ran   bool
	acked []llm.SafetyCheck
}

// act runs one tool call and returns what the model is told.
func (r *Runner) act(ctx context.Context, step int, call llm.ToolCall, m mapping) outcome {
	start := Event{Type: "tool_call_start", ActivityType: "tool_call", Tool: call.Name, Summary: call.Name + " " + string(call.Args), Point: actionPoint(call, m)}
	var o outcome
	var err error
	switch {
	case call.Native != "" && r.task.Host:
		// A provider's computer tool was never offered to an agent
		// without a VM: a call of it is refused like any VM tool's.
		start.Summary = describeNative(call)
		r.emit(step, start)
		err = r.hostRefusal(call.Name)
	case call.Native != "":
		start.Summary = describeNative(call)
		r.emit(step, start)
		o, err = r.runNative(ctx, step, call, m)
	default:
		r.emit(step, start)
		o.text, o.image, err = r.run(ctx, step, call, m)
		o.ran = err == nil
	}
	out, activity := o.text, "tool_result"
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped from outside (cancel, kill switch, time limit): the
		// call did not fail, it was cut short.
		out, activity = "Interrupted: "+interruption(ctx), "info"
		o.isError = true
	case err != nil:
		// An error may quote what the guest reported (a window's name,
		// its answer): it is filtered like the guest's output.
		out, activity = "Error: "+err.Error(), "error"
		o.isError = true
	}
	// Cut before the filter (a guest's answer may be megabytes) but not
	// so short that a secret at the cut escapes it, and again after.
	out = r.filter(out[:min(len(out), resultBytes+16<<10)])
	summary := call.Name + " " + firstLine(out)
	switch activity {
	case "info":
		summary = call.Name + " interrupted: " + interruption(ctx)
	case "error":
		summary = call.Name + " failed: " + strings.TrimPrefix(out, "Error: ")
	}
	r.emit(step, Event{Type: "tool_call_result", ActivityType: activity, Tool: call.Name, Summary: summary, Details: truncate(out, 4000)})
	o.text = truncate(out, resultBytes)
	return o
}

// resultBytes is the most of a tool's result the model is shown.
const resultBytes = 16000

// noImage is a tool's text result, which shows no image.
func noImage(text string, err error) (string, *llm.Image, error) { return text, nil, err }

// interruption says in words why ctx ended.
func interruption(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errCancelled):
		return "the task was cancelled"
	case errors.Is(cause, errTimedOut):
		return "the task reached its time limit"
	case cause != nil && !errors.Is(cause, context.Canceled):
		return cause.Error()
	}
	return "the task was stopped"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return truncate(line, 200)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… [truncated]"
}

// run executes a tool call: host tools ask the user; guest tools go to the
// guest after the policy and coordinate mapping. Only the tools offered to
// the model run: any other name (a guest method such as shutdown or
// hello, a tool the policy denies, a made-up one) is refused here and never
// reaches the guest.
func (r *Runner) run(ctx context.Context, step int, call llm.ToolCall, m mapping) (string, *llm.Image, error) {
	if !r.offered[call.Name] {
		if r.task.Host {
			return "", nil, r.hostRefusal(call.Name)
		}
		if call.Name == config.UseCredential && r.task.Policy.For(config.UseCredential) != config.Deny {
			return "", nil, fmt.Errorf("no credentials are stored (the user adds them in Settings › Credentials): log in with what the user tells you, or ask")
		}
		if r.task.TextOnly && slices.Contains(pointerTools, call.Name) {
			return "", nil, fmt.Errorf("%s aims at a screenshot, and this model gets none: act on elements by id (click_element, set_element_value) and with the keyboard", call.Name)
		}
		if slices.Contains(config.AgentTools, call.Name) || slices.Contains(config.HostToolNames, call.Name) {
			return "", nil, fmt.Errorf("%s is not allowed for this task", call.Name)
		}
		return "", nil, fmt.Errorf("there is no tool %q: the tools you can call are %s", truncate(call.Name, 64), strings.Join(slices.Sorted(maps.Keys(r.offered)), ", "))
	}
	if t := r.hostTools[call.Name]; t != nil {
		return noImage(r.runHost(ctx, step, t, call.Args))
	}
	var args map[string]any
	if err := json.Unmarshal(call.Args, &args); err != nil || args == nil {
		return "", nil, fmt.Errorf("%s: the arguments are not a JSON object: %s", call.Name, truncate(string(call.Args), 200))
	}
	if err := checkArgs(call.Name, args); err != nil {
		return "", nil, err
	}
	switch call.Name {
	case "ask_text_question", "ask_multiple_choice":
		q, _ := args["question"].(string)
		var options []string
		if raw, ok := args["options"].([]any); ok {
			for _, o := range raw {
				if s, ok := o.(string); ok {
					options = append(options, s)
				}
			}
		}
		r.emit(step, Event{Type: "question", ActivityType: "user_question", Summary: q, Details: strings.Join(options, " | ")})
		answer, _, err := r.ctl.ask(ctx, q, options)
		if err != nil {
			return "", nil, err
		}
		r.emit(step, Event{Type: "status_change", ActivityType: "user_answer", Summary: "Answer: " + answer})
		return "The user answered: " + answer, nil, nil
	case "request_user_intervention":
		reason, _ := args["reason"].(string)
		r.ctl.pause("the agent asks for help: "+reason, false)
		r.setStatus(store.StatusPaused, "the agent asks for help: "+reason)
		if err := r.ctl.waitResumed(ctx); err != nil {
			return "", nil, err
		}
		return "The user handed control back.", nil, nil
	case "screenshot":
		return "A new screenshot comes with the next turn.", nil, nil
	case todoSpec.name:
		return noImage(r.runTodo(args))
	case config.UseCredential:
		return noImage(r.useCredential(ctx, step, args, string(call.Args)))
	}
	// The permission: the tool's own, or open_terminal's for a call that
	// starts a terminal, a shell, an interpreter or a program file
	// (opengate.go).
	gate, what, details := call.Name, call.Name, string(call.Args)
	askAnyway := false
	if call.Name == protocol.MethodOpenApp || call.Name == protocol.MethodOpenFile {
		j, err := r.openGate(ctx, step, call.Name, args, string(call.Args))
		if err != nil {
			return "", nil, err
		}
		gate, what, details, askAnyway = j.gate, j.what, j.details, j.askAnyway
	}
	if gates := elementGates[call.Name]; gates != nil {
		// An element tool is what it does: a denied click denies clicking
		// an element, and a click that asks asks for it too.
		gate = gates[0]
		for _, g := range gates {
			if p := r.task.Policy.For(g); p == config.Deny || (p == config.Ask && r.task.Policy.For(gate) != config.Deny) {
				gate = g
			}
		}
		what = fmt.Sprintf("%s (%s)", gate, call.Name)
	}
	perm := r.task.Policy.For(gate)
	if askAnyway && perm == config.Allow {
		perm = config.Ask
	}
	switch perm {
	case config.Deny:
		if gate == config.OpenTerminal {
			return "", nil, fmt.Errorf("opening a terminal, a shell or an interpreter is not allowed for this task (%s)", what)
		}
		return "", nil, fmt.Errorf("%s is not allowed for this task", call.Name)
	case config.Ask:
		r.emit(step, Event{Type: "permission_request", ActivityType: "user_question", Summary: "Approve " + what + "?", Details: details})
		ok, _, err := r.ctl.requestPermission(ctx, gate, details)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, fmt.Errorf("the user denied %s", what)
		}
	}
	if elementGates[call.Name] != nil {
		return noImage(r.runElement(ctx, call.Name, args, m))
	}
	if call.Name == protocol.MethodAccessibilityTree {
		var p protocol.AccessibilityParams
		p.App, _ = args["app"].(string)
		if d, ok := args["maxDepth"].(float64); ok {
			p.MaxDepth = int(d)
		}
		p.OnlyVisible, _ = args["onlyVisible"].(bool)
		var shown *mapping
		if !r.task.TextOnly {
			shown = &m
		}
		return noImage(r.readTree(ctx, p, shown))
	}
	for _, pair := range pointArgs[call.Name] {
		x, xok := args[pair[0]].(float64)
		y, yok := args[pair[1]].(float64)
		if !xok || !yok {
			return "", nil, fmt.Errorf("%s needs numbers %s and %s", call.Name, pair[0], pair[1])
		}
		// A point off the screenshot is refused, not moved to the edge
		// (where close buttons sit).
		if !m.onShot(x, y) {
			return "", nil, fmt.Errorf("%s: (%s, %s) = (%g, %g) is off the screen: the screenshot is %dx%d pixels, x from 0 to %d and y from 0 to %d",
				call.Name, pair[0], pair[1], x, y, m.shotW, m.shotH, m.shotW-1, m.shotH-1)
		}
		args[pair[0]], args[pair[1]] = m.toGuest(x, y)
	}
	if call.Name == protocol.MethodReadFile {
		return r.readFile(ctx, args)
	}
	var note string
	if call.Name == protocol.MethodRunShell {
		r.withEnv(args)
		note = clampTimeout(args)
		defer r.watchShell(step)()
	}
	var result json.RawMessage
	if err := r.cfg.Guest.Call(ctx, call.Name, args, &result); err != nil {
		return "", nil, err
	}

	if string(result) == "{}" || len(result) == 0 {
		return "Done.", nil, nil
	}
	if note != "" {
		return string(result) + "\n" + note, nil, nil
	}
	return string(result), nil, nil
}
