package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/store"
)

// The todo tool (issue 36): the agent keeps a checklist of its work, which
// the user sees as it ticks items off. A plan-first task's checklist
// starts as the approved plan's items (Task.Todo); the agent may create
// it anew, add items and complete them by number. Every change goes to
// Config.Todo. The items are the model's words: filtered like everything
// else the runner lets out, one line each, bounded in number and length.

// Bounds of the checklist.
const (
	maxTodoItems = 50
	maxTodoText  = 200
)

var todoSpec = toolSpec{"todo",
	"Your checklist, which the user sees: create replaces it with items, add appends items, complete ticks off item (from 1) as soon as it is done.",
	objOpen + `"action":{"type":"string","enum":["create","add","complete"]},"items":{"type":"array","items":{"type":"string"}},` +
		`"item":{"type":"integer","minimum":1}},"required":["action"]}`}

// todoPrompt tells the model of its checklist.
const todoPrompt = "Checklist: for work of several steps, keep a checklist with the todo tool (create it first, complete each item as you finish it); the user watches it."

// Todo returns the checklist as it is now.
func (r *Runner) Todo() []store.TodoItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.todo)
}

// runTodo carries out a call of the todo tool and answers the checklist.
func (r *Runner) runTodo(args map[string]any) (string, error) {
	action, _ := args["action"].(string)
	var texts []string
	if raw, ok := args["items"].([]any); ok {
		for _, v := range raw {
			if s := todoText(r.filter, v); s != "" {
				texts = append(texts, s)
			}
		}
	}
	r.mu.Lock()
	list := slices.Clone(r.todo)
	r.mu.Unlock()
	switch action {
	case "create", "add":
		if len(texts) == 0 {
			return "", fmt.Errorf("todo %s needs items: the texts of the items, e.g. {\"action\":%q,\"items\":[\"Open the report\",\"Save the chart\"]}", action, action)
		}
		if action == "create" {
			list = nil
		}
		if len(list)+len(texts) > maxTodoItems {
			return "", fmt.Errorf("todo: a checklist holds at most %d items (it has %d)", maxTodoItems, len(list))
		}
		for _, s := range texts {
			list = append(list, store.TodoItem{Text: s})
		}
	case "complete":
		n, ok := args["item"].(float64)
		if !ok {
			return "", fmt.Errorf("todo complete needs item, the number of the item done (from 1)")
		}
		if int(n) < 1 || int(n) > len(list) {
			return "", fmt.Errorf("todo: there is no item %d; the checklist has %d item(s)", int(n), len(list))
		}
		list[int(n)-1].Done = true
	}
	r.mu.Lock()
	r.todo = list
	r.mu.Unlock()
	if r.cfg.Todo != nil {
		r.cfg.Todo(slices.Clone(list))
	}
	return checklist(list), nil
}

// todoText is one item's text: filtered, on one line, at most maxTodoText
// characters.
func todoText(filter func(string) string, v any) string {
	s, _ := v.(string)
	s = strings.Join(strings.Fields(filter(s)), " ")
	if r := []rune(s); len(r) > maxTodoText {
		s = string(r[:maxTodoText-1]) + "…"
	}
	return s
}

// checklist is the list as the model reads it.
func checklist(list []store.TodoItem) string {
	if len(list) == 0 {
		return "The checklist is empty."
	}
	done := 0
	var b strings.Builder
	for i, it := range list {
		mark := " "
		if it.Done {
			mark, done = "x", done+1
		}
		fmt.Fprintf(&b, "\n[%s] %d. %s", mark, i+1, it.Text)
	}
	return fmt.Sprintf("Checklist (%d of %d done):", done, len(list)) + b.String()
}
