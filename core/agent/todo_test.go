package agent

import (
	"slices"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/tests/llmtest/claudetest"
)

// todoLog records what Config.Todo hears.
type todoLog struct {
	mu    sync.Mutex
	lists [][]store.TodoItem
}

func (l *todoLog) add(list []store.TodoItem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists = append(l.lists, list)
}

func (l *todoLog) all() [][]store.TodoItem {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lists)
}

// TestTodoToolKeepsTheChecklist: a task seeded with the plan's items tells
// the model its checklist; the model ticks items off, adds one and makes
// mistakes (a number out of range, an empty add), which are refused in
// words without touching the list; every change reaches Config.Todo;
// items are one line, filtered and bounded.
func TestTodoToolKeepsTheChecklist(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("todo", map[string]any{"action": "complete", "item": 1})}},
		{calls: []openai.ToolCall{call("todo", map[string]any{"action": "complete", "item": 7}), call("todo", map[string]any{"action": "add", "items": []string{}})}},
		{calls: []openai.ToolCall{call("todo", map[string]any{"action": "add", "items": []string{"Check\nthe\x1b[31m chart", strings.Repeat("long ", 100)}})}},
		{calls: []openai.ToolCall{call("todo", map[string]any{"action": "complete", "item": 2})}},
	}, done(true, "Saved the report.")...)...)
	var heard todoLog
	e := newEnvWith(t, l, func(task *Task) {
		task.Todo = []store.TodoItem{{Text: "Open the report"}, {Text: "Save it as PDF"}}
	}, nil, func(c *Config) { c.Todo = heard.add })
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	reqs := l.requests()
	if !strings.Contains(reqs[0], `Your checklist, from the approved plan`) || !strings.Contains(reqs[0], `[ ] 1. Open the report\n[ ] 2. Save it as PDF`) {
		t.Fatalf("the first request does not show the checklist:\n%s", reqs[0])
	}
	if !strings.Contains(reqs[1], `Checklist (1 of 2 done):\n[x] 1. Open the report\n[ ] 2. Save it as PDF`) {
		t.Fatalf("the first todo call's result:\n%s", reqs[1])
	}
	if !strings.Contains(reqs[2], "there is no item 7; the checklist has 2 item(s)") || !strings.Contains(reqs[2], "todo add needs items") {
		t.Fatalf("mistakes are not said:\n%s", reqs[2])
	}
	final := e.r.Todo()
	if len(final) != 4 || !final[0].Done || !final[1].Done || final[2].Done || final[2].Text != `Check the\x1b[31m chart` ||
		len([]rune(final[3].Text)) != maxTodoText || !strings.HasSuffix(final[3].Text, "…") {
		t.Fatalf("final checklist %+v", final)
	}
	lists := heard.all()
	if len(lists) != 3 || !lists[0][0].Done || lists[0][1].Done || len(lists[1]) != 4 || !slices.Equal(lists[2], final) {
		t.Fatalf("Config.Todo heard %+v", lists)
	}
}

// TestTodoBesideTheComputerTool: a model with its own computer tool gets
// the todo function beside it and ticks the checklist off with it.
func TestTodoBesideTheComputerTool(t *testing.T) {
	s := claudetest.New(t)
	s.Script("[[todo]]",
		claudetest.ToolUse("todo", map[string]any{"action": "create", "items": []string{"Take a look", "Say so"}}),
		claudetest.Reply(claudetest.Computer("screenshot", nil), claudetest.ToolUse("todo", map[string]any{"action": "complete", "item": 1})),
		claudetest.ToolUse("todo", map[string]any{"action": "complete", "item": 2}),
		claudetest.Text("Looked."), claudetest.Verdict(true, "Looked and said so."))
	var heard todoLog
	e := newEnvWith(t, newLLM(t), func(task *Task) { task.Description = "[[todo]] Look" }, nil,
		withClient(claudeClient(t, s, "claude-sonnet-4-5")), func(c *Config) { c.Todo = heard.add })
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result %+v", res)
	}
	noRefusals(t, s)
	reqs := s.Received("[[todo]]")
	if !strings.Contains(reqs[0].Body, `"name":"todo"`) || !strings.Contains(reqs[0].Body, `"type":"computer_`) {
		t.Fatalf("the todo function is not offered beside the computer tool: %s", reqs[0].Body)
	}
	if got := e.r.Todo(); len(got) != 2 || !got[0].Done || !got[1].Done {
		t.Fatalf("checklist %+v", got)
	}
	if n := len(heard.all()); n != 3 {
		t.Fatalf("Config.Todo heard %d changes, want 3", n)
	}
}
