package agent

import (
	"encoding/json"
	"slices"

	"github.com/hivecrew/hivecrew/core/llm"
)

// toolSpec is one function tool the model sees (guestagent/protocol/PROTOCOL.md, "Agent
// tools"): the guest methods, with coordinates in the pixels of the last
// screenshot, and the host tools.
type toolSpec struct {
	name, description string
	params            string // JSON schema of the arguments
}

const (
	point   = `"x":{"type":"number"},"y":{"type":"number"}`
	noArgs  = `{"type":"object","properties":{}}`
	objOpen = `{"type":"object","properties":{`
)

var toolSpecs = []toolSpec{
	{"screenshot", "Take a new screenshot of the screen.", noArgs},
	{"mouse_click", "Click at x, y: pixels of the last screenshot from its top left.", objOpen + point + `,"button":{"type":"string","enum":["left","right","middle"]},"clickType":{"type":"string","enum":["single","double","triple"]}},"required":["x","y"]}`},
	{"mouse_move", "Move the pointer to x, y of the last screenshot.", objOpen + point + `},"required":["x","y"]}`},
	{"mouse_drag", "Drag with the left button between two points of the last screenshot.", objOpen + `"fromX":{"type":"number"},"fromY":{"type":"number"},"toX":{"type":"number"},"toY":{"type":"number"}},"required":["fromX","fromY","toX","toY"]}`},
	{"scroll", "Scroll at x, y of the last screenshot by lines: positive deltaY down, deltaX right.", objOpen + point + `,"deltaX":{"type":"number"},"deltaY":{"type":"number"}},"required":["x","y"]}`},
	{"keyboard_type", "Type text (any characters) into the focused element.", objOpen + `"text":{"type":"string"}},"required":["text"]}`},
	{"keyboard_key", "Press a key with modifiers, e.g. key \"s\" with [\"control\"], or \"return\".", objOpen + `"key":{"type":"string"},"modifiers":{"type":"array","items":{"type":"string","enum":["command","control","option","shift","fn"]}}},"required":["key"]}`},
	{"open_app", "Open an application by name or bundle/desktop id.", objOpen + `"name":{"type":"string"}},"required":["name"]}`},
	{"open_file", "Open a file, optionally with a given application.", objOpen + `"path":{"type":"string"},"app":{"type":"string"}},"required":["path"]}`},
	{"open_url", "Open a URL in the default browser.", objOpen + `"url":{"type":"string"}},"required":["url"]}`},
	{"run_shell", "Run a shell command in the shared folder: exit code, stdout and stderr.", objOpen + `"command":{"type":"string"},"timeoutSeconds":{"type":"number"},"cwd":{"type":"string"}},"required":["command"]}`},
	{"read_file", "Read a file of the shared folder (relative or absolute path): text; the text of PDF, Word, Excel (CSV, a sheet a page), PowerPoint, OpenDocument, RTF, HTML; an image (PNG, JPEG, GIF, WebP, HEIC) shown. Long text comes in parts: the answer says the page (or sheet, slide; from 1) and offset to go on from.",
		objOpen + `"path":{"type":"string"},"page":{"type":"integer","minimum":1},"offset":{"type":"integer","minimum":0}},"required":["path"]}`},
	{"write_file", "Write a text file.", objOpen + `"path":{"type":"string"},"contents":{"type":"string"}},"required":["path","contents"]}`},
	{"list_directory", "List a folder.", objOpen + `"path":{"type":"string"}},"required":["path"]}`},
	{"move_file", "Move or rename a file or folder.", objOpen + `"source":{"type":"string"},"destination":{"type":"string"}},"required":["source","destination"]}`},
	{"traverse_accessibility_tree", "Read the accessibility tree (roles, names, values, frames).", objOpen + `"app":{"type":"string"},"maxDepth":{"type":"integer"},"onlyVisible":{"type":"boolean"}}}`},
	{"get_frontmost_app", "Name the application in front and its window title.", noArgs},
	{"list_running_apps", "List the applications with windows.", noArgs},
	{"clipboard_read", "Read the text on the clipboard.", noArgs},
	{"clipboard_write", "Put text on the clipboard.", objOpen + `"text":{"type":"string"}},"required":["text"]}`},
	{"wait", "Wait a number of seconds.", objOpen + `"seconds":{"type":"number"}},"required":["seconds"]}`},
	{"ask_text_question", "Ask the user a question and wait for the answer.", objOpen + `"question":{"type":"string"}},"required":["question"]}`},
	{"ask_multiple_choice", "Ask the user to choose one of several options.", objOpen + `"question":{"type":"string"},"options":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["question","options"]}`},
	{"request_user_intervention", "Ask the user to take over (log in, a CAPTCHA); you wait until they hand back.", objOpen + `"reason":{"type":"string"}},"required":["reason"]}`},
	credentialSpec,
	todoSpec,
}

// elementSpecs are the element tools (elements.go): not policy names of
// their own, each is gated by the tools in elementGates.
var elementSpecs = []toolSpec{
	{"click_element", "Click the centre of an element of the last accessibility tree by id (\"e12\").", objOpen + `"id":{"type":"string"},"button":{"type":"string","enum":["left","right","middle"]},"clickType":{"type":"string","enum":["single","double","triple"]}},"required":["id"]}`},
	{"set_element_value", "Replace a text field's text (an element of the last accessibility tree): click, select all, type.", objOpen + `"id":{"type":"string"},"text":{"type":"string"}},"required":["id","text"]}`},
	{"read_element", "Show an element of the last accessibility tree: role, name, value, frame.", objOpen + `"id":{"type":"string"}},"required":["id"]}`},
}

// pointerTools need a screenshot to aim: a model without vision is not
// offered them (it acts on elements instead).
var pointerTools = []string{"screenshot", "mouse_click", "mouse_move", "mouse_drag", "scroll"}

// nativeTools are what a provider's own computer tool does (native.go):
// a model that has one is not offered them as functions too.
var nativeTools = []string{"screenshot", "mouse_click", "mouse_move", "mouse_drag", "scroll", "keyboard_type", "keyboard_key", "wait"}

// tools returns the function tools for the LLM, leaving out those the
// policy denies outright (todo, which only keeps the checklist, is not the
// policy's), for a model without vision the pointer tools,
// and for a model with its own computer tool what that tool does.
func tools(denied func(string) bool, textOnly, native bool) []llm.Tool {
	out := make([]llm.Tool, 0, len(toolSpecs)+len(elementSpecs))
	specs := slices.Clone(toolSpecs)
	for _, s := range elementSpecs {
		if !slices.ContainsFunc(elementGates[s.name], denied) {
			specs = append(specs, s)
		}
	}
	for _, s := range specs {
		if (elementGates[s.name] == nil && s.name != todoSpec.name && denied(s.name)) || (textOnly && slices.Contains(pointerTools, s.name)) ||
			(native && slices.Contains(nativeTools, s.name)) {
			continue
		}
		out = append(out, llm.Tool{Name: s.name, Description: s.description, Parameters: json.RawMessage(s.params)})
	}
	return out
}

// pointArgs lists, per tool, the argument pairs that are screen points.
var pointArgs = map[string][][2]string{
	"mouse_click": {{"x", "y"}}, "mouse_move": {{"x", "y"}}, "scroll": {{"x", "y"}},
	"mouse_drag": {{"fromX", "fromY"}, {"toX", "toY"}},
}
