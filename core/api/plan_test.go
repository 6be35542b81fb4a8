package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestPlanStreamsRevisesAndTicksOff: a plan-first task's plan comes as
// llm_stream events of its event stream (?live=1) while the model writes
// it; revise_plan takes the user's words (blank ones are refused) and the
// model's rewrite waits for review; approved, the task's todo starts as
// the plan's items and shows each one the agent ticks off.
func TestPlanStreamsRevisesAndTicksOff(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	slow := llmtest.Text("1. Open the file.\n2. Read it.")
	slow.Pace = 40 * time.Millisecond
	h.llm.Script("[[revise]]", slow,
		llmtest.Text("1. Open the file.\n2. Read it.\n3. Save a summary."),
		llmtest.Tool("todo", map[string]any{"action": "complete", "item": 1}),
		llmtest.Tool("todo", map[string]any{"action": "complete", "item": 3}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Summarised."))
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Plan it [[revise]]", PlanFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	streamed := planStream(t, h, task.ID)
	if !strings.HasPrefix("1. Open the file.\n2. Read it.", streamed) || streamed == "" {
		t.Fatalf("the plan streamed as %q", streamed)
	}
	h.waitTask(task.ID, "the plan", func(t wire.Task) bool { return t.Status == "planReview" })

	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "revise_plan", "instructions": "  "})
	var asked wire.Task
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "revise_plan", "instructions": "Save a summary too."}), &asked)
	if asked.Status == "planReview" && asked.PlanRevision == "" && !strings.Contains(*asked.PlanMarkdown, "summary") {
		t.Fatalf("the answer to revise_plan: %+v", asked)
	}
	revised := h.waitTask(task.ID, "the revised plan", func(t wire.Task) bool {
		return t.Status == "planReview" && strings.Contains(*t.PlanMarkdown, "3. Save a summary.")
	})
	if revised.PlanRevision != "" {
		t.Fatalf("planRevision %q after the rewrite", revised.PlanRevision)
	}
	if r := h.llm.Requests("[[revise]]"); len(r) < 2 || !strings.Contains(r[1], "Save a summary too.") {
		t.Fatal("the words did not reach the model")
	}
	h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "approve_plan"})
	done := h.waitTask(task.ID, "the end", terminal)
	want := []wire.TodoItem{{Text: "Open the file.", Done: true}, {Text: "Read it."}, {Text: "Save a summary.", Done: true}}
	if done.Status != "completed" || len(done.Todo) != 3 || done.Todo[0] != want[0] || done.Todo[1] != want[1] || done.Todo[2] != want[2] {
		t.Fatalf("ended %s with todo %+v", done.Status, done.Todo)
	}
}

// planStream reads a task's event stream with ?live=1 until the plan is
// under review and answers the text of its llm_stream events.
func planStream(t *testing.T, h *helper, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.addr+"/api/v1/tasks/"+id+"/events?live=1", nil)
	req.Header.Set("Authorization", "Bearer "+h.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var text strings.Builder
	event := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "llm_stream":
			var ev wire.LiveEvent
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Data.Reset {
				text.Reset()
			}
			text.WriteString(ev.Data.Text)
		case "status_change":
			var ev wire.Event
			json.Unmarshal([]byte(data), &ev)
			if ev.Data.Status == "planReview" {
				return text.String()
			}
		}
	}
	t.Fatalf("the event stream ended before the plan was under review: %v", sc.Err())
	return ""
}
