package orchestrator

import (
	"regexp"
	"strings"

	"github.com/hivecrew/hivecrew/core/store"
)

// A task's checklist (the agent's todo tool, core/agent todo.go): a
// plan-first task's starts as the approved plan's items; every change the
// agent makes is kept with the task, which the agent window shows.

// Bounds of a checklist made from a plan (the agent's own).
const (
	maxPlanItems    = 50
	maxPlanItemText = 200
)

var (
	numberedItem = regexp.MustCompile(`^( *)\d{1,3}[.)]\s+(.+)$`)
	bulletItem   = regexp.MustCompile(`^( *)[-*+]\s+(.+)$`)
)

// planItems are the checklist of a plan in Markdown: its top-level
// numbered items (those least indented), else its top-level bullets; each
// on one line, without emphasis marks, bounded.
func planItems(plan string) []store.TodoItem {
	lines := strings.Split(strings.ReplaceAll(plan, "\t", "    "), "\n")
	for _, re := range []*regexp.Regexp{numberedItem, bulletItem} {
		type item struct {
			indent int
			text   string
		}
		var found []item
		top := -1
		for _, line := range lines {
			m := re.FindStringSubmatch(strings.TrimRight(line, " \r"))
			if m == nil {
				continue
			}
			found = append(found, item{len(m[1]), m[2]})
			if top < 0 || len(m[1]) < top {
				top = len(m[1])
			}
		}
		var out []store.TodoItem
		for _, it := range found {
			if it.indent != top || len(out) == maxPlanItems {
				continue
			}
			text := strings.Join(strings.Fields(strings.NewReplacer("**", "", "__", "", "`", "").Replace(it.text)), " ")
			if r := []rune(text); len(r) > maxPlanItemText {
				text = string(r[:maxPlanItemText-1]) + "…"
			}
			if text != "" {
				out = append(out, store.TodoItem{Text: text})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// saveTodo keeps the agent's checklist with its task.
func (o *Orchestrator) saveTodo(id string, list []store.TodoItem) {
	_, err := o.update(id, store.Update{Mutate: func(t *store.Task) error {
		t.Todo = list
		return nil
	}})
	if err != nil {
		o.cfg.Log.Error("keep the checklist", "task", id, "err", err)
	}
}
