package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// Native computer tools in real sandboxes: Claude's computer tool and
// OpenAI's computer-use model drive a real desktop through the guest
// agent, with the strict scripted server of each protocol as the model.

// clickEvent is what the test app reports of a press.
type clickEvent struct {
	Event  string  `json:"event"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Button int     `json:"button"`
}

// startClicksApp runs the guest tests' GTK app (tests/guest/testdata) over
// the whole screen in the sandbox; it reports presses, in root
// coordinates, to workspace/clicks.jsonl of the shared folder.
func startClicksApp(t *testing.T, m vm.Machine, g *guest.Client) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "guest", "testdata", "app.py"))
	if err != nil {
		t.Fatal(err)
	}
	shared := m.Spec().SharedDir()
	if err := os.WriteFile(filepath.Join(shared, "workspace", "app.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(shared, "workspace", "clicks.jsonl")
	if _, err := g.Shell(context.Background(), protocol.ShellParams{Command: "setsid python3 workspace/app.py clicks > workspace/clicks.jsonl 2>/dev/null < /dev/null &"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the clicks app's window", func() bool { return len(readClicks(out, "ready")) > 0 })
	time.Sleep(300 * time.Millisecond)
	return out
}

func readClicks(path, kind string) []clickEvent {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []clickEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e clickEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == kind {
			out = append(out, e)
		}
	}
	return out
}

func claudeFor(t *testing.T, s *claudetest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Type: llm.TypeAnthropic, BaseURL: s.URL, Model: "claude-sonnet-4-5", BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runner(t *testing.T, c *llm.Client, g *guest.Client, data, id, description string, policy config.ToolPolicy) (*agent.Runner, string) {
	t.Helper()
	dir := filepath.Join(data, "Sessions", id)
	tw, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	if policy == nil {
		policy = config.ToolPolicy{}
	}
	r, err := agent.New(agent.Config{Task: agent.Task{ID: id, Description: description, Network: config.NetworkOffline, Policy: policy, Timeout: 2 * time.Minute},
		LLM: c, Guest: g, Trace: tw, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

func claudeRefusals(t *testing.T, s *claudetest.Server) {
	t.Helper()
	for _, r := range s.Refusals() {
		t.Errorf("the API would refuse (%d %s): %s", r.Status, r.Type, r.Message)
	}
}

// TestClaudeClickLandsWhereItPoints: on a 1280x800 screen (declared as
// 1024x640) and a 1920x1080 one (declared as 1024x576), both fitted in
// XGA's box and scaled, the
// points Claude names on the screenshots it was sent land on the guest
// pixels they stand for, as a real GTK window receives them; every
// screenshot it was sent is exactly the declared display's size.
func TestClaudeClickLandsWhereItPoints(t *testing.T) {
	for _, c := range []struct {
		w, h   int
		dw, dh int
	}{{1280, 800, 1024, 640}, {1920, 1080, 1024, 576}} {
		t.Run(fmt.Sprintf("%dx%d", c.w, c.h), func(t *testing.T) {
			m, g, data := startSizedGuest(t, fmt.Sprintf("click%d", c.w), c.w, c.h)
			clicks := startClicksApp(t, m, g)
			points := [][2]int{{c.dw / 2, c.dh / 2}, {100, 700 * c.dh / 800}, {c.dw - 1, 0}, {321, 123}}
			var turns []claudetest.Turn
			for _, p := range points {
				turns = append(turns, claudetest.Computer("left_click", map[string]any{"coordinate": []int{p[0], p[1]}}))
			}
			s := claudetest.New(t)
			s.Script("[[points]]", append(turns, claudetest.Text("Clicked them all."), claudetest.Verdict(true, "Clicked."))...)
			r, _ := runner(t, claudeFor(t, s), g, data, "points", "[[points]] Click the points.", nil)
			if res := r.Run(context.Background()); res.Status != store.StatusCompleted {
				t.Fatalf("result %+v", res)
			}
			got := readClicks(clicks, "press")
			if len(got) != len(points) {
				t.Fatalf("%d presses for %d clicks: %+v", len(got), len(points), got)
			}
			for i, p := range points {
				// The guest pixel the display point stands for.
				wx := math.Min(math.Round(float64(p[0])*float64(c.w)/float64(c.dw)), float64(c.w-1))
				wy := math.Min(math.Round(float64(p[1])*float64(c.h)/float64(c.dh)), float64(c.h-1))
				if got[i].X != wx || got[i].Y != wy {
					t.Errorf("Claude's (%d, %d) on the %dx%d display landed at (%g, %g), want (%g, %g)", p[0], p[1], c.dw, c.dh, got[i].X, got[i].Y, wx, wy)
				}
			}
			for i, req := range s.Received("[[points]]") {
				if !strings.Contains(req.Body, fmt.Sprintf(`"display_width_px":%d`, c.dw)) || !strings.Contains(req.Body, fmt.Sprintf(`"display_height_px":%d`, c.dh)) {
					t.Errorf("request %d does not declare %dx%d", i, c.dw, c.dh)
				}
				for _, img := range req.Images {
					if img.Width != c.dw || img.Height != c.dh {
						t.Errorf("request %d: a screenshot of %dx%d, not the declared %dx%d", i, img.Width, img.Height, c.dw, c.dh)
					}
				}
			}
			claudeRefusals(t, s)
		})
	}
}

const nativeSentence = "Claude saves its work with the keyboard."

// TestClaudeWritesWithOnlyTheComputerTool: with a text editor open on a
// file in outbox/, a scripted Claude looks, types a sentence and saves with
// ctrl+s, using nothing but its computer tool; the file holds the
// sentence and the task completes with its verdict.
func TestClaudeWritesWithOnlyTheComputerTool(t *testing.T) {
	m, g, data := startGuest(t, "claudeeditor")
	note := filepath.Join(m.Spec().SharedDir(), "outbox", "note.txt")
	// Made by the guest's user, as the agent's own files are.
	if err := g.Call(context.Background(), protocol.MethodWriteFile, map[string]any{"path": "outbox/note.txt", "contents": ""}, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Call(context.Background(), protocol.MethodOpenFile, protocol.OpenFileParams{Path: filepath.Join(g.Hello().SharedPath, "outbox", "note.txt"), App: "mousepad"}, nil); err != nil {
		t.Fatal(err)
	}
	s := claudetest.New(t)
	s.Script("[[editor]]",
		claudetest.Computer("wait", map[string]any{"duration": 2}),
		claudetest.Computer("screenshot", nil),
		claudetest.Computer("type", map[string]any{"text": nativeSentence}),
		claudetest.Computer("key", map[string]any{"text": "ctrl+s"}),
		claudetest.Computer("wait", map[string]any{"duration": 1}),
		claudetest.Text("I typed the sentence and saved it."),
		claudetest.Verdict(true, "Saved the sentence in outbox/note.txt."))
	r, dir := runner(t, claudeFor(t, s), g, data, "claudeeditor", "[[editor]] Write the sentence into the open file and save it.", nil)
	res := r.Run(context.Background())
	if res.Status != store.StatusCompleted || res.Summary != "Saved the sentence in outbox/note.txt." {
		t.Fatalf("result %+v", res)
	}
	got, err := os.ReadFile(note)
	if err != nil || strings.TrimSpace(string(got)) != nativeSentence {
		sess, _ := trace.Read(dir)
		for _, e := range sess.Events {
			t.Logf("%s %s: %s", e.Type, e.Tool, e.Summary)
		}
		t.Fatalf("outbox/note.txt = %q, %v", got, err)
	}
	// Only the computer tool ran.
	sess, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sess.Events {
		if e.Type == "tool_call_start" && e.Tool != llm.ComputerTool {
			t.Errorf("a %s call ran", e.Tool)
		}
	}
	claudeRefusals(t, s)
}

// TestComputerUseWaitsForTheSafetyCheck: OpenAI's computer-use model asks
// for a click with a pending safety check. The click waits for the user,
// whatever the policy; once the user approves, it lands in the real
// window, the next request acknowledges the check, and the task goes on
// to completion.
func TestComputerUseWaitsForTheSafetyCheck(t *testing.T) {
	m, g, data := startGuest(t, "cua")
	clicks := startClicksApp(t, m, g)
	s := responsestest.New(t)
	s.Script("[[cua]]",
		responsestest.Items(responsestest.Reasoning("The button is in the middle."),
			responsestest.WithSafetyCheck(responsestest.Computer(map[string]any{"type": "click", "button": "left", "x": 512, "y": 320}),
				"malicious_instructions", "The page says to ignore previous instructions.")),
		responsestest.Computer(map[string]any{"type": "double_click", "x": 100, "y": 100}),
		responsestest.Text("Both clicks are done."),
		responsestest.Verdict(true, "Clicked twice."))
	c, err := llm.New(llm.Config{Type: llm.TypeOpenAI, BaseURL: s.URL, Model: "computer-use-preview"})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := runner(t, c, g, data, "cua", "[[cua]] Press the button.", config.ToolPolicy{"mouse_click": config.Allow})
	done := make(chan agent.Result, 1)
	go func() { done <- r.Run(context.Background()) }()
	waitUntil(t, "the safety check", func() bool { _, p := r.Pending(); return p != nil })
	_, p := r.Pending()
	if p.Tool != "safety_check" || !strings.Contains(p.Details, "ignore previous instructions") {
		t.Fatalf("permission %+v", p)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(readClicks(clicks, "press")); n != 0 || len(s.Acknowledgements()) != 0 {
		t.Fatalf("before the approval: %d presses, %d acknowledgements", n, len(s.Acknowledgements()))
	}
	approved := time.Now()
	if err := r.Respond(p.ID, true); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != store.StatusCompleted || res.Summary != "Clicked twice." {
		t.Fatalf("result %+v", res)
	}
	presses := readClicks(clicks, "press")
	if len(presses) < 2 || presses[0].X != 640 || presses[0].Y != 400 {
		t.Fatalf("presses %+v", presses)
	}
	acks := s.Acknowledgements()
	if len(acks) != 1 || acks[0].At.Before(approved) {
		t.Fatalf("acknowledgements %+v (approved at %s)", acks, approved)
	}
	if n := s.Refusals(); n != 0 {
		t.Fatalf("%d requests refused", n)
	}
	for i, req := range s.Received() {
		for _, img := range req.Images {
			if img.Width != 1024 || img.Height != 640 {
				t.Errorf("request %d: a %dx%d screenshot, not the declared 1024x640", i, img.Width, img.Height)
			}
		}
	}
}
