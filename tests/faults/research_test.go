package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
	"github.com/hivecrew/hivecrew/tests/llmtest/responsestest"
)

// worker is a scripted server of one protocol serving as the worker
// model: script gives a research subagent's requests with marker a
// checklist, (forged, where the protocol's server lets a model call what
// it was not offered) a VM tool, and the end with summary.
type worker struct {
	name, typ, model, url string
	forges                bool
	script                func(marker, summary string)
	bodies                func(marker string) []string
	refused               func() int
}

func workers(t *testing.T) []worker {
	checklist := map[string]any{"action": "create", "items": []string{"Find the spring tide", "Say its height"}}
	shell := map[string]any{"command": "cat /etc/passwd"}
	chat, claude, responses := llmtest.New(t), claudetest.New(t), responsestest.New(t)
	return []worker{
		{name: "Chat worker", typ: "openai-compatible", model: "scripted-small", url: chat.URL, forges: true,
			script: func(marker, summary string) {
				chat.Script(marker, append([]llmtest.Turn{llmtest.Tool("todo", checklist), llmtest.Tool("run_shell", shell)}, llmtest.Done(summary)...)...)
			},
			bodies: chat.Requests, refused: func() int { return 0 }},
		{name: "Claude worker", typ: "anthropic", model: "claude-sonnet-4-5", url: claude.URL,
			script: func(marker, summary string) {
				claude.Script(marker, append([]claudetest.Turn{claudetest.ToolUse("todo", checklist)}, claudetest.Done(summary)...)...)
			},
			bodies: claude.Requests, refused: func() int { return len(claude.Refusals()) }},
		{name: "Responses worker", typ: "openai", model: "gpt-5", url: responses.URL,
			script: func(marker, summary string) {
				responses.Script(marker, append([]responsestest.Turn{responsestest.Call("todo", checklist)}, responsestest.Done(summary)...)...)
			},
			bodies: responses.Requests, refused: responses.Refusals},
	}
}

// TestResearchSubagentOnEveryProtocol, on a real helper with real
// sandboxes and one VM at once: a task in the only VM starts a research
// subagent (domain host) and awaits it. The subagent runs beside it on
// the worker model of Settings, once of each protocol (Chat Completions,
// Anthropic's Messages, OpenAI's Responses), with no VM: it keeps its
// checklist, a forged call of a VM tool is refused in words, no request
// carries an image, and its result reaches the parent, which completes.
// No strict server refused a request.
func TestResearchSubagentOnEveryProtocol(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	parentLLM := llmtest.New(t)
	h.setup(parentLLM.URL, 1)
	ctx := context.Background()
	for i, w := range workers(t) {
		t.Run(w.typ, func(t *testing.T) {
			model := w.model
			if _, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &w.name, Type: &w.typ, BaseURL: &w.url, DefaultModelID: &model}); err != nil {
				t.Fatal(err)
			}
			helperproc.Settings(t, h.unix, map[string]any{"workerProviderName": w.name, "workerModelId": w.model})
			child, parent := fmt.Sprintf("[[research %d]]", i), fmt.Sprintf("[[parent %d]]", i)
			want := fmt.Sprintf("The spring tide reaches 5.6 metres (%s).", w.typ)
			w.script(child, want)
			parentLLM.Script(parent, append([]llmtest.Turn{
				llmtest.Tool("spawn_subagent", map[string]any{"task": "Find how high the spring tide is in Porthleven " + child, "domain": "host"}),
				llmtest.Tool("await_subagents", map[string]any{"timeoutSeconds": 120}),
			}, llmtest.Done("The parent has the tide.")...)...)
			done := h.runToEnd(wire.CreateTask{Description: "Plan a sail " + parent})
			h.ids.Note(done.VMID)
			if len(done.Subagents) != 1 || done.Subagents[0].Domain != "host" {
				t.Fatalf("subagents %+v", done.Subagents)
			}
			kid, err := h.unix.Task(ctx, done.Subagents[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if kid.Status != "completed" || summary(kid) != want || kid.VMID != "" || kid.SubagentDomain != "host" || kid.ProviderName != w.name || kid.ModelID != w.model {
				t.Fatalf("subagent %s %q, VM %q, domain %q, model %s of %s", kid.Status, summary(kid), kid.VMID, kid.SubagentDomain, kid.ModelID, kid.ProviderName)
			}
			if len(kid.Todo) != 2 || kid.Todo[1].Text != "Say its height" {
				t.Fatalf("the subagent's checklist %+v", kid.Todo)
			}
			if all := strings.Join(parentLLM.Requests(parent), "\n"); !strings.Contains(all, "ended completed: "+want) {
				t.Fatalf("the parent's model never had the subagent's result")
			}
			bodies := w.bodies(child)
			if len(bodies) < 3 {
				t.Fatalf("the worker had %d requests", len(bodies))
			}
			for j, b := range bodies {
				if strings.Contains(b, "image_url") || strings.Contains(b, `"input_image"`) || strings.Contains(b, `"type":"image"`) || strings.Contains(b, `"type":"computer`) {
					t.Errorf("worker request %d carries an image or a computer tool", j)
				}
			}
			if w.forges && !strings.Contains(strings.Join(bodies, "\n"), "run_shell needs a VM, and this subagent has none") {
				t.Error("the forged run_shell was not refused in words")
			}
			if n := w.refused(); n != 0 {
				t.Errorf("the %s server refused %d request(s)", w.typ, n)
			}
		})
	}
}
