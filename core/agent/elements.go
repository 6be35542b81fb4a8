package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Element actions and the vision-less mode (issue 17.4, 17.5). Each time the
// agent reads the accessibility tree (the traverse_accessibility_tree tool,
// or every step's observation for a model without vision) it numbers the
// elements e1, e2, … in reading order and shows them one a line. The model
// can then act on an element by its id, set-of-marks style: click it, replace
// its text, read it again. The frame the guest gave is mapped to a point as
// a click in a screenshot is.
//
// The tree is the guest's, so it is untrusted: names and values are cut to
// elementTextMax runes with control and format characters shown as spaces,
// a tree is shown up to treeMaxElements elements and treeMaxBytes, and an
// element's frame is used only if its centre is on the screen. The ids are
// the agent's own; the guest's are not shown or trusted.

const (
	treeMaxElements = 400
	treeMaxBytes    = 24 << 10
	elementTextMax  = 120
)

// elementGates are the element tools and the tools whose permissions gate
// them: clicking an element is a click, replacing its text a click and
// typing, reading one reads the tree. A tool is offered only when none of
// its gates is denied, and asks when one of them asks.
var elementGates = map[string][]string{
	"click_element":     {protocol.MethodMouseClick},
	"set_element_value": {protocol.MethodMouseClick, protocol.MethodKeyboardType},
	"read_element":      {protocol.MethodAccessibilityTree},
}

// element is one element of the last tree read.
type element struct {
	role, name string
	value      *string
	frame      protocol.Rect // guest points
}

// treeView is a tree as the model reads it, and its elements by id.
type treeView struct {
	text     string
	elements map[string]element
}

// viewTree numbers the elements of a tree and writes them one a line,
// indented by depth. Frames are shown in the pixels of the last screenshot
// when m is set (the model can also click them), else left out. Names and
// values go through redact first (a field that holds a typed secret shows
// it; quoting could spell it otherwise).
func viewTree(nodes []protocol.Node, m *mapping, redact func(string) string) treeView {
	v := treeView{elements: map[string]element{}}
	var b strings.Builder
	n, cut := 0, false
	var walk func([]protocol.Node, int)
	walk = func(ns []protocol.Node, depth int) {
		for _, node := range ns {
			if cut {
				return
			}
			if n >= treeMaxElements || b.Len() >= treeMaxBytes {
				cut = true
				return
			}
			n++
			id := fmt.Sprintf("e%d", n)
			el := element{role: clean(node.Role, 40), name: clean(redact(node.Name), elementTextMax), frame: node.Frame}
			fmt.Fprintf(&b, "%s%s %s", strings.Repeat("  ", min(depth, 12)), id, el.role)
			if el.name != "" {
				fmt.Fprintf(&b, " %q", el.name)
			}
			if node.Value != nil {
				val := clean(redact(*node.Value), elementTextMax)
				el.value = &val
				fmt.Fprintf(&b, " = %q", val)
			}
			if m != nil && node.Frame.W > 0 && node.Frame.H > 0 {
				x, y := m.toShot(node.Frame.X, node.Frame.Y)
				x2, y2 := m.toShot(node.Frame.X+node.Frame.W, node.Frame.Y+node.Frame.H)
				fmt.Fprintf(&b, " [%.0f,%.0f %.0fx%.0f]", x, y, x2-x, y2-y)
			}
			b.WriteByte('\n')
			v.elements[id] = el
			walk(node.Children, depth+1)
		}
	}
	walk(nodes, 0)
	if cut {
		fmt.Fprintf(&b, "… (%d elements shown; ask for one application with \"app\" to see more)\n", n)
	}
	if n == 0 {
		b.WriteString("(no accessible elements)\n")
	}
	v.text = b.String()
	return v
}

// clean makes a guest string safe to show: control and format characters
// become spaces, and it is cut to max runes.
func clean(s string, max int) string {
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			r = ' '
		}
		b.WriteRune(r)
		i++
	}
	return strings.TrimSpace(b.String())
}

// readTree reads the accessibility tree and remembers its elements.
func (r *Runner) readTree(ctx context.Context, p protocol.AccessibilityParams, m *mapping) (string, error) {
	var res protocol.AccessibilityResult
	if err := r.cfg.Guest.Call(ctx, protocol.MethodAccessibilityTree, p, &res); err != nil {
		return "", err
	}
	v := viewTree(res.Nodes, m, r.redactor.Redact)
	r.elements = v.elements
	return v.text, nil
}

// elementPoint is the guest point at the centre of an element of the last
// tree.
func (r *Runner) elementPoint(id string, m mapping) (element, float64, float64, error) {
	el, ok := r.elements[id]
	if !ok {
		if len(r.elements) == 0 {
			return el, 0, 0, fmt.Errorf("there is no element %q: read the accessibility tree first", truncate(id, 40))
		}
		return el, 0, 0, fmt.Errorf("there is no element %q in the last accessibility tree (e1 to e%d)", truncate(id, 40), len(r.elements))
	}
	f := el.frame
	x, y := f.X+f.W/2, f.Y+f.H/2
	if f.W <= 0 || f.H <= 0 || x < 0 || y < 0 || x >= float64(m.screenW) || y >= float64(m.screenH) {
		return el, 0, 0, fmt.Errorf("element %s (%s %q) is not on the screen: it cannot be clicked", id, el.role, el.name)
	}
	return el, x, y, nil
}

// runElement runs an element tool (its permission was checked).
func (r *Runner) runElement(ctx context.Context, name string, args map[string]any, m mapping) (string, error) {
	id, _ := args["id"].(string)
	if name == "read_element" {
		el, ok := r.elements[id]
		if !ok {
			_, _, _, err := r.elementPoint(id, m)
			return "", err
		}
		out := map[string]any{"id": id, "role": el.role, "name": el.name, "frame": el.frame}
		if el.value != nil {
			out["value"] = *el.value
		}
		b, _ := json.Marshal(out)
		return string(b) + " (as of the last tree read)", nil
	}
	el, x, y, err := r.elementPoint(id, m)
	if err != nil {
		return "", err
	}
	click := protocol.ClickParams{X: x, Y: y}
	click.Button, _ = args["button"].(string)
	click.ClickType, _ = args["clickType"].(string)
	if err := r.cfg.Guest.Call(ctx, protocol.MethodMouseClick, click, nil); err != nil {
		return "", err
	}
	if name == "click_element" {
		return fmt.Sprintf("Clicked %s (%s %q).", id, el.role, el.name), nil
	}
	text, _ := args["text"].(string)
	if err := r.cfg.Guest.Call(ctx, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "a", Modifiers: []string{selectAllModifier(r.cfg.Guest.Hello().OS)}}, nil); err != nil {
		return "", err
	}
	if err := r.cfg.Guest.Call(ctx, protocol.MethodKeyboardType, protocol.TypeParams{Text: text}, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("Replaced the text of %s (%s %q) with %d characters.", id, el.role, el.name, len([]rune(text))), nil
}

// selectAllModifier is the modifier of select-all on the guest's OS.
func selectAllModifier(os string) string {
	if os == "macos" {
		return "command"
	}
	return "control"
}
