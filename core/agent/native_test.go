package agent

import (
	"fmt"
	"image/color"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// Native computer tools against the fake guest (a 1440x900-point screen at
// scale 2, declared to the model as 1024x640, fitted in XGA's box) and the strict
// scripted servers of each protocol.

// withClient is a runner option: the model is this client's.
func withClient(c *llm.Client) func(*Config) { return func(cfg *Config) { cfg.LLM = c } }

func claudeClient(t *testing.T, s *claudetest.Server, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Type: llm.TypeAnthropic, BaseURL: s.URL, Model: model, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func noRefusals(t *testing.T, s *claudetest.Server) {
	t.Helper()
	for _, r := range s.Refusals() {
		t.Errorf("the API would refuse (%d %s): %s", r.Status, r.Type, r.Message)
	}
}

// TestClaudeComputerToolDrivesTheGuest: Claude clicks a point of the
// declared display, types, and presses keys in xdotool's names; the click
// lands on the widget in guest points, the keys arrive as the guest's, the
// screenshots it is sent are exactly the declared display's size, and
// the task completes with the forced-tool verdict.
func TestClaudeComputerToolDrivesTheGuest(t *testing.T) {
	s := claudetest.New(t)
	s.Script("[[native]]",
		claudetest.Computer("left_click", map[string]any{"coordinate": []int{676, 370}}),
		claudetest.Reply(claudetest.Computer("type", map[string]any{"text": "hello"}), claudetest.Computer("key", map[string]any{"text": "ctrl+s"})),
		claudetest.Computer("key", map[string]any{"text": "KP_0 Return shift+Tab"}),
		claudetest.Computer("left_click", map[string]any{"coordinate": []int{100, 100}, "text": "shift"}),
		claudetest.Text("Saved."), claudetest.Verdict(true, "Clicked Save, typed hello, saved."))
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[native]] Save it" }, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	e.m.Driver().SetWidgets([]fake.Widget{{Name: "Save", Frame: protocol.Rect{X: 900, Y: 500, W: 100, H: 40}, Color: color.RGBA{200, 0, 0, 255}}})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted || res.Summary != "Clicked Save, typed hello, saved." {
		t.Fatalf("result %+v", res)
	}
	acts := e.m.Driver().Actions()
	if len(acts) != 7 {
		t.Fatalf("actions %+v", acts)
	}
	if w, ok := e.m.Driver().WidgetAt(acts[0].X, acts[0].Y); acts[0].Kind != "click" || !ok || w.Name != "Save" {
		t.Fatalf("the click at (%g, %g) missed the widget", acts[0].X, acts[0].Y)
	}
	want := []fake.Action{{Kind: "type", Text: "hello"}, {Kind: "key", Text: "s", Modifiers: []string{"control"}},
		{Kind: "key", Text: "kp0"}, {Kind: "key", Text: "return"}, {Kind: "key", Text: "tab", Modifiers: []string{"shift"}}}
	for i, w := range want {
		a := acts[1+i]
		if a.Kind != w.Kind || a.Text != w.Text || !slices.Equal(a.Modifiers, w.Modifiers) {
			t.Errorf("action %d: %+v, want %+v", 1+i, a, w)
		}
	}
	if last := acts[6]; last.Kind != "click" || !slices.Equal(last.Modifiers, []string{"shift"}) || last.X != 141 || last.Y != 141 {
		t.Errorf("the shift-click: %+v, want at (141, 141) points with shift", last)
	}
	noRefusals(t, s)
	reqs := s.Received("[[native]]")
	if len(reqs) < 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Images) == 0 {
			t.Errorf("request %d shows no screen", i)
		}
		for _, img := range r.Images {
			if img.Width != 1024 || img.Height != 640 {
				t.Errorf("request %d: a screenshot of %dx%d, not the declared 1024x640", i, img.Width, img.Height)
			}
		}
		if !strings.Contains(r.Body, `"display_width_px":1024`) || !strings.Contains(r.Body, `"display_height_px":640`) || strings.Contains(r.Body, `"name":"mouse_click"`) {
			t.Errorf("request %d: the computer tool is not declared as 1024x640, or the function pointer tools are offered beside it", i)
		}
	}
	// The screen after a step is in its last action's result, as
	// Claude's computer tool returns it.
	if !strings.Contains(reqs[1].Body, `"tool_result"`) || len(reqs[1].Images) > 3 {
		t.Errorf("second request: %d images, tool result %v", len(reqs[1].Images), strings.Contains(reqs[1].Body, `"tool_result"`))
	}
}

// TestNativeActionsFollowThePolicy: a native click is a mouse_click to the
// policy: denied, it is not carried out and the model is told; asked, the
// user is asked in words.
func TestNativeActionsFollowThePolicy(t *testing.T) {
	s := claudetest.New(t)
	s.Script("[[deny]]", claudetest.Computer("left_click", map[string]any{"coordinate": []int{10, 10}}), claudetest.Text("Cannot."), claudetest.Verdict(false, "Clicking is not allowed."))
	e := newEnvWith(t, newLLM(t), func(task *Task) {
		task.Description = "[[deny]] click"
		task.Policy = config.ToolPolicy{"mouse_click": config.Deny}
	}, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	wait(t, e.run())
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("a denied click was carried out: %+v", acts)
	}
	if reqs := s.Requests("[[deny]]"); len(reqs) < 2 || !strings.Contains(reqs[1], "is not allowed for this task") {
		t.Fatalf("the model was not told (%d requests)", len(reqs))
	}
	noRefusals(t, s)

	s = claudetest.New(t)
	s.Script("[[ask]]", claudetest.Computer("double_click", map[string]any{"coordinate": []int{512, 320}}), claudetest.Text("Done."), claudetest.Verdict(true, "Done."))
	e = newEnvWith(t, newLLM(t), func(task *Task) {
		task.Description = "[[ask]] click"
		task.Policy = config.ToolPolicy{"mouse_click": config.Ask}
	}, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	res := e.run()
	var p *Permission
	waitFor(t, "the permission request", func() bool { _, p = e.r.Pending(); return p != nil })
	if p.Tool != "mouse_click" || p.Details != "double-click at (512, 320)" {
		t.Fatalf("permission %+v", p)
	}
	if err := e.r.Respond(p.ID, true); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	if acts := e.m.Driver().Actions(); len(acts) != 1 || acts[0].Kind != "click" || acts[0].Count != 2 || acts[0].X != 720 || acts[0].Y != 450 {
		t.Fatalf("actions %+v", acts)
	}
	noRefusals(t, s)
}

// TestBadNativeActionsAreRefusedInWords: an unknown key and a point off
// the display reach no guest and tell the model why.
func TestBadNativeActionsAreRefusedInWords(t *testing.T) {
	s := claudetest.New(t)
	s.Script("[[bad]]",
		claudetest.Computer("key", map[string]any{"text": "ctrl+Hyper_Z"}),
		claudetest.Text("Giving up."), claudetest.Verdict(false, "Could not."))
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[bad]] x" }, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	wait(t, e.run())
	if acts := e.m.Driver().Actions(); len(acts) != 0 {
		t.Fatalf("actions reached the guest: %+v", acts)
	}
	reqs := s.Requests("[[bad]]")
	if len(reqs) < 2 || !strings.Contains(reqs[1], `unknown key \"Hyper_Z\"`) {
		t.Fatalf("the model was not told of the unknown key (%d requests)", len(reqs))
	}
	noRefusals(t, s)
	// A point off the display (Claude keeps to it; a model might not).
	m := mapping{shotW: 1280, shotH: 800, screenW: 1440, screenH: 900}
	if _, _, err := guestPoint("click", llm.Point{X: 1280, Y: 10}, m); err == nil || !strings.Contains(err.Error(), "is off the screen: the display is 1280x800 pixels") {
		t.Errorf("off the display: %v", err)
	}
	if x, y, err := guestPoint("click", llm.Point{X: 1279, Y: 799}, m); err != nil || x != 1439 || y != 899 {
		t.Errorf("the display's last pixel: (%g, %g) %v", x, y, err)
	}
}

// TestZoomShowsARegionAtFullResolution: Claude Opus 4.5's zoom of the
// display's top-left quarter is answered with that quarter of the guest's
// 2880x1800-pixel screen, fitted to the display.
func TestZoomShowsARegionAtFullResolution(t *testing.T) {
	s := claudetest.New(t)
	s.Script("[[zoom]]", claudetest.Computer("zoom", map[string]any{"region": []int{0, 0, 512, 320}}), claudetest.Text("I see it."), claudetest.Verdict(true, "Seen."))
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[zoom]] look" }, nil, withClient(claudeClient(t, s, "claude-opus-4-5")))
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	reqs := s.Received("[[zoom]]")
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	found := false
	for _, img := range reqs[1].Images {
		if strings.Contains(img.Path, "tool_result") && img.Width == 1024 && img.Height == 640 {
			found = true
		}
	}
	if !found || !strings.Contains(reqs[1].Body, "The region, 1024x640 pixels") {
		t.Fatalf("the zoom's image: %+v", reqs[1].Images)
	}
	noRefusals(t, s)
}

// TestSafetyCheckWaitsForTheUser: a computer-use-preview call with a
// pending safety check waits for the user's approval, whatever the policy
// (clicks are allowed); approved, it runs and the next request
// acknowledges the check; denied, it is not carried out, nothing is
// acknowledged, and the model is told.
func TestSafetyCheckWaitsForTheUser(t *testing.T) {
	for _, approve := range []bool{true, false} {
		s := responsestest.New(t)
		s.Script("[[check]]", responsestest.WithSafetyCheck(responsestest.Computer(map[string]any{"type": "click", "button": "left", "x": 640, "y": 400}),
			"malicious_instructions", "The page tells you to ignore the user."),
			responsestest.Text("Done."), responsestest.Verdict(true, "Handled."))
		c, err := llm.New(llm.Config{Type: llm.TypeOpenAI, BaseURL: s.URL, Model: "computer-use-preview", BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnvWith(t, newLLM(t), func(task *Task) {
			task.Description = "[[check]] click it"
			task.Policy = config.ToolPolicy{"mouse_click": config.Allow}
		}, nil, withClient(c))
		res := e.run()
		var p *Permission
		waitFor(t, "the safety check's approval", func() bool { _, p = e.r.Pending(); return p != nil })
		if p.Tool != "safety_check" || !strings.Contains(p.Details, "The page tells you to ignore the user.") || !strings.Contains(p.Details, "click at (640, 400)") {
			t.Fatalf("permission %+v", p)
		}
		if len(e.m.Driver().Actions()) != 0 || len(s.Acknowledgements()) != 0 {
			t.Fatal("the action ran, or the check was acknowledged, before the user answered")
		}
		if err := e.r.Respond(p.ID, approve); err != nil {
			t.Fatal(err)
		}
		wait(t, res)
		acks, acts := s.Acknowledgements(), e.m.Driver().Actions()
		if approve && (len(acks) != 1 || len(acts) != 1 || acts[0].Kind != "click") {
			t.Errorf("approved: acknowledgements %+v, actions %+v", acks, acts)
		}
		if !approve && (len(acks) != 0 || len(acts) != 0) {
			t.Errorf("denied: acknowledgements %+v, actions %+v", acks, acts)
		}
		if !approve {
			if got := s.Received(); len(got) < 2 || !strings.Contains(got[1].Body, "did not approve the action") {
				t.Errorf("the model was not told of the denial")
			}
		}
		if n := s.Refusals(); n != 0 {
			t.Errorf("%d requests refused", n)
		}
	}
}

// TestKeyNames: xdotool's names and OpenAI's become the guest's.
func TestKeyNames(t *testing.T) {
	for in, want := range map[string]string{
		"ctrl+s": "control+s", "Return": "return", "KP_0": "kp0", "super": "super", "alt+Tab": "option+tab",
		"ctrl+shift+t": "control+shift+t", "A": "shift+a", "BackSpace": "delete", "Delete": "forwarddelete",
		"Page_Down": "pagedown", "ctrl+plus": "control++", "ctrl++": "control++", "ENTER": "return",
		"ARROWLEFT": "left", "cmd+c": "command+c", "super+l": "super+l", "F5": "f5", "KP_Enter": "kpenter", "shift": "shift",
		"ctrl+minus": "control+-", "Escape": "escape", "ctrl+alt+Delete": "control+option+forwarddelete", "CTRL+S": "control+shift+s",
	} {
		c, err := parseCombo(in)
		if err != nil || comboText(c) != want {
			t.Errorf("%q: %q, %v; want %q", in, comboText(c), err, want)
		}
	}
	for _, bad := range []string{"XF86AudioMute", "ctrl+", "foo+s", "F99", "KP_10"} {
		if c, err := parseCombo(bad); err == nil {
			t.Errorf("%q read as %q", bad, comboText(c))
		}
	}
	if cs, err := parseKeys("ctrl+a Delete"); err != nil || len(cs) != 2 {
		t.Errorf("two combinations: %+v %v", cs, err)
	}
	// OpenAI's keypress names a letter in capitals: the letter's key.
	a, err := llm.ParseOpenAIAction([]byte(`{"type":"keypress","keys":["CTRL","S"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := parseCombo(a.Keys[0]); err != nil || comboText(c) != "control+s" {
		t.Errorf("OpenAI's CTRL, S: %q, %v", comboText(c), err)
	}
}

// TestClaudeCacheBreakpoints: over a 10-step task with Claude's computer
// tool, every request after the first reads the one before it from the
// strict server's prompt cache; a request whose screenshots the next one
// drops (3 of them, the window full) writes nothing to the cache (its
// newest screenshot is input, not a cache write nobody reads), and the
// request that drops them reads at least all the text before its screen
// and writes again only what follows the first screenshot dropped; the
// completion check writes none of its messages.
func TestClaudeCacheBreakpoints(t *testing.T) {
	s := claudetest.New(t)
	var turns []claudetest.Turn
	for i := range 9 {
		turns = append(turns, claudetest.Reply(claudetest.Text(strings.Repeat("I look and type. ", 40)), claudetest.Computer("type", map[string]any{"text": fmt.Sprint("line ", i)})))
	}
	s.Script("[[cache]]", append(turns, claudetest.Text("Typed."), claudetest.Verdict(true, "Typed."))...)
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[cache]] " + strings.Repeat("Type lines. ", 400) }, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("result %+v", r)
	}
	noRefusals(t, s)
	reqs := s.Received("[[cache]]")
	if len(reqs) != 11 { // 10 steps and the completion check
		t.Fatalf("%d requests", len(reqs))
	}
	reqs = reqs[:10]
	full := 0
	for i, r := range reqs {
		u := r.Usage
		if n := strings.Count(r.Body, `"cache_control"`); n > 4 {
			t.Errorf("request %d: %d breakpoints", i, n)
		}
		if i > 0 && u.CacheReadInputTokens == 0 {
			t.Errorf("request %d read nothing from the cache: %+v", i, u)
		}
		if len(r.Images) == 3 {
			full++
			if u.CacheCreationInputTokens != 0 || u.InputTokens < 874 {
				t.Errorf("request %d (its screenshots dropped next): %+v, want no cache writes and its screen as input", i, u)
			}
			// (The first window's oldest screenshot is in the task's message:
			// only the tools and system prompt stay before it.)
			if next := reqs[i+1]; len(next.Images) != 1 || (i > 2 && next.Usage.CacheReadInputTokens < u.CacheReadInputTokens-3*874-400) {
				t.Errorf("request %d (dropping the screenshots) read %d tokens; the one before read %d", i+1, next.Usage.CacheReadInputTokens, u.CacheReadInputTokens)
			}
		}
	}
	if full != 3 {
		t.Errorf("%d requests with the window full, want 3 (of 10)", full)
	}
	// The request that drops the screenshots reads up to the call whose
	// result showed the oldest of them: it writes its new step again, and
	// of the dropped chunk only the two steps after its first screenshot
	// (each a step's words and call: what a step writes beside its screen).
	for i := 5; i+1 < len(reqs); i += 3 {
		step := reqs[i-1].Usage.CacheCreationInputTokens
		if drop := reqs[i+1].Usage.CacheCreationInputTokens; drop-step > 2*(step-874)+50 {
			t.Errorf("request %d (dropping the screenshots) wrote %d tokens, a step writes %d: more than the chunk's two later steps again", i+1, drop, step)
		}
	}
	// The completion check (its tools are not the agent's) marks only its
	// system prompt, and sends its messages as input.
	check := s.Received("[[cache]]")[10]
	if n := strings.Count(check.Body, `"cache_control"`); n != 1 || check.Usage.CacheCreationInputTokens >= check.Usage.InputTokens {
		t.Errorf("the completion check has %d breakpoints, usage %+v; want 1, its messages as input", n, check.Usage)
	}
}

// claudeCondensing runs a Claude task of steps steps (each words times
// about 11 tokens of words and a typed line) whose summary requests the
// script answers with sums, and returns the server's agent and summary
// requests.
func claudeCondensing(t *testing.T, steps, words int, sums ...claudetest.Turn) (agentReqs, sumReqs []claudetest.Request) {
	t.Helper()
	s := claudetest.New(t)
	s.Match = func(body string) string {
		if strings.Contains(body, "You condense the history") {
			return "(sum)"
		}
		return "[[long]]"
	}
	var turns []claudetest.Turn
	for i := range steps {
		turns = append(turns, claudetest.Reply(claudetest.Text(strings.Repeat("I look at the screen and type the next line. ", words)), claudetest.Computer("type", map[string]any{"text": fmt.Sprint("line ", i)})))
	}
	s.Script("[[long]]", append(turns, claudetest.Text("Typed."), claudetest.Verdict(true, "Typed."))...)
	s.Script("(sum)", sums...)
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[long]] Type lines." }, nil, withClient(claudeClient(t, s, "claude-sonnet-4-5")))
	if r := wait(t, e.run()); r.Status != store.StatusCompleted || r.Summaries < 1 {
		t.Fatalf("result %+v, want completed after a summary", r)
	}
	noRefusals(t, s)
	return s.Received("[[long]]"), s.Received("(sum)")
}

// TestClaudeCondensesInPlace: on Claude, whose window (200k) the task
// never nears, the history is condensed once about 4k tokens of earlier
// steps would be read again at every step, at the start of an image
// chunk; the summary is asked for in the conversation itself (its tools,
// system prompt and screens, the question added), so most of that request
// is read from the prompt cache; the next request carries the summary,
// reads the tools and system prompt from the cache and shows one screen,
// the screens before it staying notes.
func TestClaudeCondensesInPlace(t *testing.T) {
	sum := claudetest.Text("SUMMARY: the agent typed lines into the terminal.")
	sum.Repeat = true
	reqs, sums := claudeCondensing(t, 16, 50, sum)
	if len(sums) == 0 {
		t.Fatal("no summary request")
	}
	first := sums[0]
	u := first.Usage
	t.Logf("%d agent requests, %d summaries; the first summary's usage %+v", len(reqs), len(sums), u)
	if !strings.Contains(first.Body, `"computer_20250124"`) || !strings.Contains(first.Body, "I look at the screen and type") || len(first.Images) != 1 {
		t.Errorf("the summary request is not the conversation as sent (its tools, steps and screen) with the question")
	}
	if u.CacheReadInputTokens < u.InputTokens+u.CacheCreationInputTokens {
		t.Errorf("the summary request read %d tokens from the cache and sent %d anew: most of it should be read", u.CacheReadInputTokens, u.InputTokens+u.CacheCreationInputTokens)
	}
	// The agent request after it: the first one holding the summary.
	after := -1
	for i, r := range reqs {
		if strings.Contains(r.Body, "SUMMARY: the agent typed") {
			after = i
			break
		}
	}
	if after < 1 {
		t.Fatal("no request carries the summary")
	}
	before, next := reqs[after-1], reqs[after]
	if len(before.Images) != 3 || len(next.Images) != 1 {
		t.Errorf("condensed with %d screens in the request before and %d after, want 3 and 1 (at the start of a chunk)", len(before.Images), len(next.Images))
	}
	if next.Usage.CacheReadInputTokens == 0 || len(next.Body) >= len(before.Body)/2 {
		t.Errorf("the request after the summary read %d tokens and is %d bytes (the one before: %d)", next.Usage.CacheReadInputTokens, len(next.Body), len(before.Body))
	}
	if n := strings.Count(next.Body, "I look at the screen and type") / 50; n > 3 {
		t.Errorf("the request after the summary still holds %d steps' words, want the last 3 screens' at most", n)
	}
}

// TestClaudeSummaryFallsBackToTheTranscript: a model that answers the
// in-place question with a tool call is asked again with the history's
// transcript, without tools, and that summary is used.
func TestClaudeSummaryFallsBackToTheTranscript(t *testing.T) {
	sum := claudetest.Text("SUMMARY: the agent typed lines.")
	sum.Repeat = true
	reqs, sums := claudeCondensing(t, 12, 50, claudetest.Computer("type", map[string]any{"text": "not a summary"}), sum)
	if len(sums) < 2 || !strings.Contains(sums[0].Body, `"computer_20250124"`) || strings.Contains(sums[1].Body, `"tools"`) {
		t.Fatalf("%d summary requests; want the conversation first, then a transcript without tools", len(sums))
	}
	if !strings.Contains(sums[1].Body, "The history to condense") {
		t.Errorf("the second summary request is not the transcript: %.300s", sums[1].Body)
	}
	found := false
	for _, r := range reqs {
		found = found || strings.Contains(r.Body, "SUMMARY: the agent typed lines.")
	}
	if !found {
		t.Error("no agent request carries the transcript's summary")
	}
}

// TestClaudeCondensesAtMostEvery10Steps: a history that grows by about
// 2,000 tokens a step passes 4,096 tokens every other step, but is
// condensed for cost at most once in 10 steps.
func TestClaudeCondensesAtMostEvery10Steps(t *testing.T) {
	sum := claudetest.Text("SUMMARY: the agent typed lines.")
	sum.Repeat = true
	reqs, sums := claudeCondensing(t, 24, 180, sum)
	var at []int
	for i, r := range reqs {
		if strings.Contains(r.Body, "SUMMARY: the agent typed") && (i == 0 || !strings.Contains(reqs[i-1].Body, "SUMMARY: the agent typed") || len(r.Body) < len(reqs[i-1].Body)/2) {
			at = append(at, i)
		}
	}
	t.Logf("%d agent requests; %d summaries, the first request after each: %v", len(reqs), len(sums), at)
	if len(sums) != 2 || len(at) != 2 || at[1]-at[0] < 10 {
		t.Errorf("%d summaries, the history shortened at requests %v: want 2, at least 10 steps apart", len(sums), at)
	}
}
