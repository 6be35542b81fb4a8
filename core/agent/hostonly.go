package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Agents without a VM (issue 36.2). A task with Task.Host is a research
// subagent: it has no VM, sees no screen and has no guest tools. It works
// with the host tools it is given (web search and reading, MCP servers'
// tools, skills, subagents of its own) and its checklist, and its result
// is its answer in words. Nothing it calls reaches for a VM: the guest
// tools, a provider's computer tool and any other name are refused in
// words, and its Guest is noVM, which refuses every call, so that no path
// of the runner can reach one either. It works with every provider type:
// its requests carry text, tool calls and their results only.

// errHostOnly is what noVM answers every call with.
var errHostOnly = errors.New("this agent works on the host and has no VM")

// noVM is the guest of an agent without a VM.
type noVM struct{}

var _ Guest = noVM{}

func (noVM) Hello() protocol.HelloResult { return protocol.HelloResult{} }

func (noVM) Screenshot(context.Context, protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	return protocol.ScreenshotResult{}, errHostOnly
}

func (noVM) Call(context.Context, string, any, any) error { return errHostOnly }

func (noVM) ReadDocument(context.Context, protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
	return protocol.DocumentResult{}, errHostOnly
}

// setupHost prepares the requests of an agent without a VM: its prompt,
// and as tools its checklist and the host tools, nothing else.
func (r *Runner) setupHost() {
	hosted, problems := prepareHostTools(r.cfg.HostTools)
	r.hostTools = hosted
	for _, p := range problems {
		r.emit(0, Event{Type: "status_change", ActivityType: "info", Summary: p})
	}
	defs := []llm.Tool{{Name: todoSpec.name, Description: todoSpec.description, Parameters: []byte(todoSpec.params)}}
	defs = append(defs, r.hostToolDefs()...)
	r.toolDefs = defs
	r.offered = make(map[string]bool, len(defs))
	for _, d := range defs {
		r.offered[d.Name] = true
	}
	r.system = hostPrompt(r.cfg.Now().Format("Monday, 2 January 2006"), r.task, r.offeredNames(), append(slices.Clone(r.cfg.Prompt), todoPrompt))
	r.toolTokens = toolsTokens(defs) + len(r.system)/4
}

// offeredNames lists the tools offered, sorted.
func (r *Runner) offeredNames() string {
	return strings.Join(slices.Sorted(maps.Keys(r.offered)), ", ")
}

// hostPrompt is the system prompt of an agent without a VM.
func hostPrompt(date string, t Task, tools string, extra []string) string {
	var b strings.Builder
	b.WriteString("You are a research subagent of Hivecrew: another agent gave you a part of its task. You work on the host, without a computer of your own: " +
		"you have no screen, no files and no shell, only these tools: " + tools + ".\n")
	fmt.Fprintf(&b, "Today is %s.\n", date)
	fmt.Fprintf(&b, "Limits: at most %d steps and %d minutes.\n", t.MaxIterations, int(t.Timeout.Minutes()))
	for _, line := range extra {
		b.WriteString(line + "\n")
	}
	var ask []string
	for _, tool := range slices.Sorted(maps.Keys(t.Policy)) {
		if t.Policy[tool] == config.Ask {
			ask = append(ask, tool)
		}
	}
	if len(ask) > 0 {
		fmt.Fprintf(&b, "The user approves each use of: %s (the call waits for the approval).\n", strings.Join(ask, ", "))
	}
	b.WriteString("\nWork step by step with your tools. Messages from the agent that started you may arrive with a step: take them into account. " +
		"When the task is done, or cannot be done, answer without a tool call, and give what you found in full (names, figures, addresses of sources): " +
		"your answer is what the agent that started you gets.\n")
	return b.String()
}

// hostRefusal says why an agent without a VM cannot call name.
func (r *Runner) hostRefusal(name string) error {
	tools := r.offeredNames()
	vmTool := slices.Contains(config.AgentTools, name) || name == llm.ComputerTool ||
		slices.ContainsFunc(elementSpecs, func(s toolSpec) bool { return s.name == name })
	switch {
	case vmTool:
		return fmt.Errorf("%s needs a VM, and this subagent has none: it works on the host, with %s only. "+
			"Do the work with those tools, or say in your answer what is left for an agent with a computer", name, tools)
	case slices.Contains(config.HostToolNames, name):
		return fmt.Errorf("%s is not available to this subagent: the tools you can call are %s", name, tools)
	}
	return fmt.Errorf("there is no tool %q: the tools you can call are %s", truncate(name, 64), tools)
}

// Message gives the agent a message from the task that started it: its
// model reads it at the start of its next turn, and the task's activity
// shows it.
func (r *Runner) Message(from, text string) {
	text = r.filter(text)
	r.ctl.report(fmt.Sprintf("Message from %s: %s", from, text))
	r.emit(r.Steps(), Event{Type: "subagent_update", ActivityType: "subagent", Summary: "Message from " + from + ": " + text, Subagent: r.task.ID})
}
