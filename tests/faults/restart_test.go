package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// protocolServer is a scripted server of one protocol, as this test
// scripts it: a step that acts, an answer held until the helper dies, and
// the end of a task.
type protocolServer struct {
	name, typ, model, url string
	// script gives marker's requests: an action, then (held until hold
	// closes, when hold is set) the end of the task.
	script func(marker string, hold chan struct{})
	// bodies are the request bodies with marker, in order.
	bodies  func(marker string) []string
	refused func() int
}

func protocols(t *testing.T) []protocolServer {
	return []protocolServer{
		func() protocolServer {
			s := llmtest.New(t)
			return protocolServer{name: "chat", typ: "openai-compatible", model: "scripted", url: s.URL,
				script: func(marker string, hold chan struct{}) {
					turns := []llmtest.Turn{llmtest.Tool("mouse_click", map[string]any{"x": 10, "y": 10})}
					if hold != nil {
						turns = append(turns, llmtest.Turn{Msg: llmtest.Text("never").Msg, Hold: hold})
					}
					s.Script(marker, append(turns, llmtest.Done("done "+marker)...)...)
				},
				bodies:  s.Requests,
				refused: func() int { return 0 },
			}
		}(),
		func() protocolServer {
			s := claudetest.New(t)
			return protocolServer{name: "anthropic", typ: "anthropic", model: "claude-sonnet-4-5", url: s.URL,
				script: func(marker string, hold chan struct{}) {
					turns := []claudetest.Turn{claudetest.Computer("left_click", map[string]any{"coordinate": []int{10, 10}})}
					if hold != nil {
						held := claudetest.Text("never")
						held.Hold = hold
						turns = append(turns, held)
					}
					s.Script(marker, append(turns, claudetest.Done("done "+marker)...)...)
				},
				bodies:  s.Requests,
				refused: func() int { return len(s.Refusals()) },
			}
		}(),
		func() protocolServer {
			s := responsestest.New(t)
			return protocolServer{name: "openai", typ: "openai", model: "computer-use-preview", url: s.URL,
				script: func(marker string, hold chan struct{}) {
					turns := []responsestest.Turn{responsestest.Computer(map[string]any{"type": "click", "button": "left", "x": 10, "y": 10})}
					if hold != nil {
						held := responsestest.Text("never")
						held.Hold = hold
						turns = append(turns, held)
					}
					s.Script(marker, append(turns, responsestest.Done("done "+marker)...)...)
				},
				bodies: func(marker string) []string {
					var out []string
					for _, r := range s.Received() {
						// A title request names the task too: not a step.
						if strings.Contains(r.Body, marker) && !strings.Contains(r.Body, llm.TitlePrompt) {
							out = append(out, r.Body)
						}
					}
					return out
				},
				refused: s.Refusals,
			}
		}(),
	}
}

// TestRestartResumesEachProtocol: for each protocol (Chat Completions,
// Anthropic's Messages with Claude's computer tool, OpenAI's Responses
// with computer-use-preview), the helper is SIGKILLed while one task runs
// (its model's answer in flight) and another is held (its token budget
// spent). After the restart both are held; resumed, each goes on in a
// fresh VM, its request carries its earlier step (the action it took) and
// the note of the restart, and it completes; the strict server refused
// nothing.
func TestRestartResumesEachProtocol(t *testing.T) {
	for _, p := range protocols(t) {
		t.Run(p.name, func(t *testing.T) {
			home, ids := newHome(t)
			h := startProcess(t, home, ids)
			model := p.model
			if _, err := h.unix.AddProvider(context.Background(), wire.ProviderInput{DisplayName: &p.name, Type: &p.typ, BaseURL: &p.url, DefaultModelID: &model}); err != nil {
				t.Fatal(err)
			}
			h.setup(p.url, 2)
			hold := make(chan struct{})
			defer close(hold)
			p.script("[[running]]", hold)
			p.script("[[held]]", nil)
			create := func(description string, budget *int64) wire.Task {
				task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: description, ProviderName: p.name, ModelID: model, BudgetTokens: budget})
				if err != nil {
					t.Fatal(err)
				}
				return task
			}
			one := int64(1)
			running := create("Keep going [[running]]", nil)
			held := create("Stop at the budget [[held]]", &one)
			h.wait(held.ID, "the held task", time.Minute, func(t wire.Task) bool { return t.Status == "paused" })
			h.waitEvent(running.ID, "the running task's second answer asked for", time.Minute, func(e wire.Event) bool {
				return e.Type == "tool_call_result"
			})
			for deadline := time.Now().Add(time.Minute); len(p.bodies("[[running]]")) < 2; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the running task never asked for its second answer")
				}
			}
			h.kill()

			h2 := startProcess(t, home, ids)
			for _, task := range []wire.Task{running, held} {
				got := h2.wait(task.ID, "held after the restart", 30*time.Second, func(t wire.Task) bool { return t.Status == "paused" })
				if !strings.Contains(got.StatusReason, "helper stopped") {
					t.Fatalf("task %s: %s %q", task.ID, got.Status, got.StatusReason)
				}
			}
			for _, c := range []struct {
				task   wire.Task
				marker string
			}{{running, "[[running]]"}, {held, "[[held]]"}} {
				before := len(p.bodies(c.marker))
				action := wire.TaskAction{Action: wire.ActionResume}
				if c.task.ID == held.ID {
					more := int64(10_000_000)
					action.BudgetTokens = &more
				}
				if _, err := h2.unix.TaskAction(context.Background(), c.task.ID, action); err != nil {
					t.Fatal(err)
				}
				done := h2.wait(c.task.ID, "the resumed task's end", 2*time.Minute, terminal)
				if done.Status != "completed" || summary(done) != "done "+c.marker {
					t.Errorf("%s: %s %q", c.marker, done.Status, summary(done))
				}
				bodies := p.bodies(c.marker)
				if len(bodies) <= before {
					t.Fatalf("%s made no request after the resume", c.marker)
				}
				next := bodies[before]
				for _, want := range []string{"Step 1.", "the Hivecrew helper stopped", "Step 2."} {
					if !strings.Contains(next, want) {
						t.Errorf("%s: the request after the resume lacks %q", c.marker, want)
					}
				}
				if !strings.Contains(next, `10`) || (p.name == "chat" && !strings.Contains(next, "mouse_click")) || (p.name != "chat" && !strings.Contains(next, "click")) {
					t.Errorf("%s: the earlier click is not in the history", c.marker)
				}
			}
			if n := p.refused(); n != 0 {
				t.Errorf("the %s server refused %d requests", p.name, n)
			}
			h2.stop()
		})
	}
}
