package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// TestOnlyOfferedToolsRun answers a prompt-injected model that calls guest
// methods it was never offered: shutdown (which powered the VM off),
// hello, health_check, a made-up name, and tools the policy denies
// (clipboard_write, run_shell). Each is refused on the host, the unknown
// ones with the list of valid tools; the guest never sees the call and
// keeps running.
func TestOnlyOfferedToolsRun(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("shutdown", map[string]any{}), call("hello", map[string]any{"protocolVersion": 1})}},
		{calls: []openai.ToolCall{call("clipboard_write", map[string]any{"text": "pwned"}), call("health_check", map[string]any{})}},
		{calls: []openai.ToolCall{call("rm_rf_everything\x1b[31m", map[string]any{}), call("run_shell", map[string]any{"command": "true"})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, func(t *Task) {
		t.Policy = config.ToolPolicy{"run_shell": config.Deny, "clipboard_write": config.Deny}
	})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("the guest was asked to act: %+v", acts)
	}
	if st := e.m.Status(); st.State != vm.StateRunning {
		t.Fatalf("the VM is %s (%s) after the calls", st.State, st.Reason)
	}
	if c, _ := e.m.Driver().ClipboardRead(context.Background()); c != "" {
		t.Fatalf("the clipboard was written: %q", c)
	}
	reqs := l.requests()
	for i, name := range map[int]string{1: "shutdown", 2: "health_check", 3: "rm_rf_everything"} {
		if !strings.Contains(reqs[i], `there is no tool \"`+name) || !strings.Contains(reqs[i], "the tools you can call are ") ||
			!strings.Contains(reqs[i], "mouse_click, mouse_drag") {
			t.Errorf("request %d does not refuse %s with the valid tools", i, name)
		}
	}
	if !strings.Contains(reqs[1], `there is no tool \"hello`) || !strings.Contains(reqs[2], "clipboard_write is not allowed for this task") {
		t.Error("hello or the denied clipboard_write was not refused")
	}
	// The refusal quotes the name with its escape spelled out (the model's
	// own message carries it raw, JSON-escaped).
	if !strings.Contains(reqs[3], `there is no tool \"rm_rf_everything\\x1b[31m\"`) {
		t.Error("the made-up name was not quoted with its escape shown")
	}
	if !strings.Contains(reqs[3], "run_shell is not allowed for this task") {
		t.Error("the denied tool was not refused as such")
	}
}

// TestClipboardAndAppTools: the clipboard and the app list are tools the
// model can call (they were guest methods it could not reach).
func TestClipboardAndAppTools(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("clipboard_write", map[string]any{"text": "copied by the agent"}), call("clipboard_read", map[string]any{}),
			call("get_frontmost_app", map[string]any{}), call("list_running_apps", map[string]any{})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	if res := wait(t, e.run()); res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	if c, _ := e.m.Driver().ClipboardRead(context.Background()); c != "copied by the agent" {
		t.Fatalf("the clipboard holds %q", c)
	}
	second := l.requests()[1]
	if !strings.Contains(second, `{\"text\":\"copied by the agent\"}`) || !strings.Contains(second, `\"apps\"`) {
		t.Errorf("the model was not told the clipboard's text and the apps: %.2000s", second)
	}
}

// TestOfferedToolsAreThePolicyVocabulary: the tools offered to the model
// are exactly the ones a policy can name (core/config AgentTools), so a
// setting never names a tool that does not exist, nor misses one that does.
// The todo tool is the one exception: it only keeps the checklist the
// user sees, and is always offered.
func TestOfferedToolsAreThePolicyVocabulary(t *testing.T) {
	var names []string
	for _, d := range tools(func(string) bool { return true }, false, false) {
		if d.Name != todoSpec.name {
			t.Fatalf("%s is offered while every tool is denied", d.Name)
		}
	}
	for _, d := range tools(func(string) bool { return false }, false, false) {
		if elementGates[d.Name] == nil && d.Name != todoSpec.name { // element tools are gated by the tools they use
			names = append(names, d.Name)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(config.AgentTools))) {
		t.Fatalf("offered %v, policy names %v", names, config.AgentTools)
	}
}

// TestToolArgumentsAreCheckedLikeUserInput: model output is untrusted
// input. A point off the screenshot used to be clamped to the screen's
// edge (where close buttons sit) and reported "Done"; a made-up argument
// was dropped silently; a wrong type failed deep in the guest. Each is now
// refused before the guest hears of it, with a message that names the
// argument (and, for points, the screenshot's size).
func TestToolArgumentsAreCheckedLikeUserInput(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{
			call("mouse_click", map[string]any{"x": 1024, "y": 100}),
			call("mouse_drag", map[string]any{"fromX": 10, "fromY": 10, "toX": 30, "toY": -1}),
			call("mouse_click", map[string]any{"x": 10, "y": 10, "colour": "red"}),
			call("keyboard_type", map[string]any{"text": 5}),
			call("keyboard_key", map[string]any{"key": "a", "modifiers": []string{"ctrl"}}),
			call("scroll", map[string]any{"x": 10}),
			{ID: "c-raw", Type: "function", Function: openai.FunctionCall{Name: "mouse_move", Arguments: `[1,2]`}},
		}},
		{calls: []openai.ToolCall{call("mouse_click", map[string]any{"x": 1023.4, "y": 639})}},
	}, done(true, "ok")...)...)
	e := newEnv(t, l, nil)
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	// Only the last, valid click (on the screenshot's last pixel) reached
	// the guest, at its last point.
	acts := e.m.Driver().Actions()
	if len(acts) != 1 || acts[0].Kind != "click" || acts[0].X != 1439 || acts[0].Y != 899 {
		t.Fatalf("the guest was asked to do %+v; want one click at (1439, 899)", acts)
	}
	second := l.requests()[1]
	for _, want := range []string{
		`mouse_click: (x, y) = (1024, 100) is off the screen: the screenshot is 1024x640 pixels, x from 0 to 1023 and y from 0 to 639`,
		`mouse_drag: (toX, toY) = (30, -1) is off the screen`,
		`mouse_click: unexpected additional properties [\"colour\"]`,
		`keyboard_type: argument text: type: 5 has type \"integer\", want \"string\"`,
		`keyboard_key: argument modifiers: enum: ctrl does not equal any of`,
		`scroll: required: missing properties: [\"y\"]`,
		`mouse_move: the arguments are not a JSON object: [1,2]`,
	} {
		if !strings.Contains(second, want) {
			t.Errorf("the model was not told %s", want)
		}
	}
	if t.Failed() {
		for _, line := range strings.Split(second, `\n`) {
			if strings.Contains(line, "Error: ") {
				t.Logf("told: %s", line)
			}
		}
	}
}
