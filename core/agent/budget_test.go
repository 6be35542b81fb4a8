package agent

import (
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/store"
)

// TestBudgetPausesAndRaisingResumes: a task whose LLM use reaches its
// token budget pauses before its next request, saying so; resuming
// without raising it pauses again; raising it and resuming goes on.
func TestBudgetPausesAndRaisingResumes(t *testing.T) {
	wait0 := turn{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}}
	l := newLLM(t, append([]turn{wait0}, done(true, "Done.")...)...)
	e := newEnv(t, l, func(t *Task) { t.BudgetTokens = 100 })
	res := e.run()
	paused := func() bool {
		s, reason := e.r.Status()
		return s == store.StatusPaused && strings.HasPrefix(reason, "token budget reached: ") && strings.Contains(reason, "of 100 tokens")
	}
	waitFor(t, "the budget pause", paused)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d requests before the pause, want 1", n)
	}
	e.r.Resume("")
	time.Sleep(100 * time.Millisecond)
	waitFor(t, "the pause again (budget not raised)", paused)
	if n := len(l.requests()); n != 1 {
		t.Fatalf("%d requests after resuming without a new budget, want still 1", n)
	}
	e.r.SetBudget(0, 1_000_000)
	e.r.Resume("")
	if r := wait(t, res); r.Status != store.StatusCompleted {
		t.Fatalf("%+v", r)
	}
}
