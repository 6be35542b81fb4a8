package agent

import (
	"image/color"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestElementActions: the tree the model reads numbers its elements, with
// frames in screenshot pixels; click_element clicks the centre of one in
// guest points; an id not in the last tree, or an element off the screen,
// is refused naming what there is; the guest's strings are shown cleaned.
func TestElementActions(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("traverse_accessibility_tree", map[string]any{})}},
		{calls: []openai.ToolCall{call("click_element", map[string]any{"id": "e3"})}},
		{calls: []openai.ToolCall{call("click_element", map[string]any{"id": "e9"})}},
		{calls: []openai.ToolCall{call("click_element", map[string]any{"id": "e4"})}},
		{calls: []openai.ToolCall{call("read_element", map[string]any{"id": "e2"})}},
		{calls: []openai.ToolCall{call("set_element_value", map[string]any{"id": "e2", "text": "hello"})}},
	}, done(true, "Clicked Save by its id.")...)...)
	e := newEnv(t, l, nil)
	e.m.Driver().SetWidgets([]fake.Widget{
		{Name: "Name\x1b[2J\u202e", Frame: protocol.Rect{X: 100, Y: 100, W: 200, H: 30}, Color: color.RGBA{0, 200, 0, 255}},
		{Name: "Save", Frame: protocol.Rect{X: 900, Y: 500, W: 100, H: 40}, Color: color.RGBA{200, 0, 0, 255}},
		{Name: "Hidden", Frame: protocol.Rect{X: 5000, Y: 5000, W: 10, H: 10}},
	})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	reqs := l.requests()
	// The tree as the model read it: ids, roles, names, frames in the
	// 1024x640 screenshot's pixels (Save: guest (900,500) is (640,356)).
	if !strings.Contains(reqs[1], `e3 push button \"Save\" [640,356 71x28]`) || !strings.Contains(reqs[1], `e1 application \"Fake\"`) {
		t.Fatalf("the tree the model read:\n%s", between(reqs[1], `"tool"`, 600))
	}
	if strings.Contains(reqs[1], `\u001b`) || strings.Contains(reqs[1], "\u202e") {
		t.Errorf("control or format characters of the guest reached the model")
	}
	acts := e.m.Driver().Actions()
	if len(acts) < 1 || acts[0].Kind != "click" {
		t.Fatalf("actions = %+v", acts)
	}
	if w, ok := e.m.Driver().WidgetAt(acts[0].X, acts[0].Y); !ok || w.Name != "Save" || acts[0].X != 950 || acts[0].Y != 520 {
		t.Fatalf("click_element e3 clicked (%g, %g), not the centre of Save", acts[0].X, acts[0].Y)
	}
	for i, want := range map[int]string{
		3: `there is no element \"e9\" in the last accessibility tree (e1 to e4)`,
		4: `element e4 (push button \"Hidden\") is not on the screen`,
		5: `\"role\":\"push button\"`,
		6: `Replaced the text of e2`,
	} {
		if !strings.Contains(reqs[i], want) {
			t.Errorf("request %d lacks %s", i, want)
		}
	}
	// set_element_value: a click on e2, select all, then the text.
	n := len(acts)
	if n < 4 || acts[n-3].Kind != "click" || acts[n-2].Text != "a" || acts[n-1].Text != "hello" {
		t.Fatalf("set_element_value did %+v", acts[max(0, n-3):])
	}
}

// TestElementToolsFollowThePolicy: an element tool is what it does. With
// clicks denied, clicking an element is neither offered nor done; with
// clicks asked for, clicking an element asks.
func TestElementToolsFollowThePolicy(t *testing.T) {
	denied := tools(func(name string) bool { return name == "mouse_click" }, false, false)
	for _, d := range denied {
		if n := d.Name; n == "click_element" || n == "set_element_value" {
			t.Errorf("%s offered with mouse_click denied", n)
		}
	}
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("traverse_accessibility_tree", map[string]any{})}},
		{calls: []openai.ToolCall{call("click_element", map[string]any{"id": "e2"})}},
	}, done(true, "Done.")...)...)
	e := newEnv(t, l, func(t *Task) { t.Policy = config.ToolPolicy{"mouse_click": config.Ask} })
	e.m.Driver().SetWidgets([]fake.Widget{{Name: "Save", Frame: protocol.Rect{X: 900, Y: 500, W: 100, H: 40}}})
	res := e.run()
	waitFor(t, "the permission request", func() bool { _, p := e.r.Pending(); return p != nil })
	_, p := e.r.Pending()
	if p.Tool != "mouse_click" {
		t.Fatalf("asked for %q, want mouse_click", p.Tool)
	}
	if err := e.r.Respond(p.ID, false); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.Status != store.StatusCompleted || len(e.m.Driver().Actions()) != 0 {
		t.Fatalf("result %+v, actions %+v", r, e.m.Driver().Actions())
	}
	if !strings.Contains(l.requests()[2], "the user denied mouse_click (click_element)") {
		t.Errorf("the model was not told of the denial")
	}
}

// TestTextOnlyModel: a model without vision gets the running applications
// and the numbered tree instead of screenshots (the trace still has them,
// for the user), is not offered the pointer tools, and acts by id.
func TestTextOnlyModel(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("click_element", map[string]any{"id": "e2"})}},
		{calls: []openai.ToolCall{call("mouse_click", map[string]any{"x": 1, "y": 1})}},
	}, done(true, "Clicked Save without seeing it.")...)...)
	e := newEnv(t, l, func(t *Task) { t.TextOnly = true })
	e.m.Driver().SetWidgets([]fake.Widget{{Name: "Save", Frame: protocol.Rect{X: 900, Y: 500, W: 100, H: 40}}})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	for i, body := range l.requests() {
		if strings.Contains(body, "image_url") {
			t.Fatalf("request %d sends an image to a model without vision", i)
		}
	}
	first := l.requests()[0]
	for _, want := range []string{`In front: \"Fake\"`, `Running: \"Fake\"`, `e2 push button \"Save\"`, "you get no screenshots"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first request lacks %s", want)
		}
	}
	if strings.Contains(first, `"name":"mouse_click"`) || strings.Contains(first, `"name":"screenshot"`) || !strings.Contains(first, `"name":"click_element"`) {
		t.Errorf("tools offered to a model without vision: want element tools, no pointer tools")
	}
	if strings.Contains(first, "[800,444") {
		t.Errorf("frames in pixels shown to a model that sees no screenshot")
	}
	acts := e.m.Driver().Actions()
	if len(acts) != 1 || acts[0].X != 950 || acts[0].Y != 520 {
		t.Fatalf("actions = %+v", acts)
	}
	if !strings.Contains(l.requests()[2], "mouse_click aims at a screenshot, and this model gets none") {
		t.Errorf("a pointer call from a model without vision was not refused")
	}
}

// between is up to n bytes of s after the first marker, for messages.
func between(s, marker string, n int) string {
	if i := strings.Index(s, marker); i >= 0 {
		s = s[i:]
	}
	return s[:min(len(s), n)]
}
