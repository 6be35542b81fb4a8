package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// A continuation (Swift's continuationSourceTaskId) gets the earlier
// task's outputs among its inputs (renamed on a clash with its own) and a
// summary of it before its task; it keeps them when the earlier task is
// deleted. An unfinished source is a conflict, an unknown one a 400.
func TestContinuationGetsTheEarlierOutputs(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	gate := make(chan struct{})
	h.llm.Script("[[source]]",
		llmtest.Turn{Msg: llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": "first draft\n"}).Msg, Hold: gate},
		llmtest.Tool("write_file", map[string]any{"path": "outbox/charts/q1.csv", "contents": "q,1\n"}),
		llmtest.Text("Written."), llmtest.Verdict(true, "Wrote the report and a chart."))
	var a wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Write the report [[source]]"}), &a)

	// Not finished yet: a conflict, and nothing is queued.
	before := h.taskCount()
	out := h.expect(409, "POST", "/api/v1/tasks", map[string]any{"description": "Improve it", "continuationSourceTaskId": a.ID})
	if !strings.Contains(string(out), "only a finished task can be continued") {
		t.Errorf("409 says %s", out)
	}
	out = h.expect(400, "POST", "/api/v1/tasks", map[string]any{"description": "Improve it", "continuationSourceTaskId": "nope"})
	if !strings.Contains(string(out), "continuationSourceTaskId: no task nope") {
		t.Errorf("400 says %s", out)
	}
	h.expect(400, "POST", "/api/v1/tasks", map[string]any{"description": "Improve it", "continuationSourceTaskId": 7})
	if n := h.taskCount(); n != before {
		t.Fatalf("%d tasks after refused continuations, want %d", n, before)
	}
	close(gate)
	a = h.waitTask(a.ID, "the end", terminal)
	if a.Status != "completed" {
		t.Fatalf("source ended %s", a.Status)
	}

	h.llm.Script("[[continue]]", llmtest.Tool("read_file", map[string]any{"path": "inbox/earlier-report.txt"}),
		llmtest.Text("Read it."), llmtest.Verdict(true, "Improved the report."))
	ct, body := multipartTask(map[string]string{"description": "Improve the report [[continue]]", "continuationSourceTaskId": a.ID},
		map[string]string{"report.txt": "my own notes\n"})
	var b wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct), &b)
	if b.ContinuationSourceTaskID != a.ID {
		t.Fatalf("continuationSourceTaskId = %q, want %s", b.ContinuationSourceTaskID, a.ID)
	}
	names := map[string]int64{}
	for _, f := range b.InputFiles {
		names[f.Name] = f.Size
	}
	if len(names) != 3 || names["report.txt"] != 13 || names["earlier-report.txt"] != 12 || names["charts_q1.csv"] != 4 {
		t.Fatalf("inputs = %+v", b.InputFiles)
	}
	// The source may go: the continuation has copies.
	h.expect(204, "DELETE", "/api/v1/tasks/"+a.ID, nil)
	b = h.waitTask(b.ID, "the end", terminal)
	if b.Status != "completed" {
		t.Fatalf("continuation ended %s: %v", b.Status, b.ErrorMessage)
	}
	reqs := h.llm.Requests("[[continue]]")
	if len(reqs) < 2 {
		t.Fatalf("%d requests of the continuation", len(reqs))
	}
	first := reqs[0]
	for _, want := range []string{"continues an earlier task (" + a.ID, "Write the report [[source]]", "Wrote the report and a chart.",
		"write_file", "earlier-report.txt", "report.txt is earlier-report.txt"} {
		if !strings.Contains(first, want) {
			t.Errorf("the continuation's first request lacks %q", want)
		}
	}
	if !strings.Contains(reqs[1], `first draft`) {
		t.Errorf("the agent did not read the earlier output: %s", reqs[1])
	}
	if got := h.expect(200, "GET", "/api/v1/tasks/"+b.ID+"/files/earlier-report.txt?type=input", nil); string(got) != "first draft\n" {
		t.Errorf("earlier-report.txt = %q", got)
	}

	// A continuation of the continuation (a chain) remembers both.
	h.llm.Script("[[chain]]", llmtest.Done("Polished.")...)
	var c wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Polish it [[chain]]", "continuationSourceTaskId": b.ID}), &c)
	h.waitTask(c.ID, "the end", terminal)
	chain := h.llm.Requests("[[chain]]")
	if len(chain) == 0 || !strings.Contains(chain[0], "It continued a task of its own") || !strings.Contains(chain[0], "Improved the report.") {
		t.Errorf("the chain's first request: %.600s", strings.Join(chain, "\n"))
	}
}

// Rerun takes another provider or model; an unknown provider is a 400.
func TestRerunOnAnotherModel(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	h.llm.Script("[[rerun]]", llmtest.Done("Counted.")...)
	var a wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Count to three [[rerun]]"}), &a)
	h.waitTask(a.ID, "the end", terminal)
	out := h.expect(400, "PATCH", "/api/v1/tasks/"+a.ID, map[string]any{"action": "rerun", "providerName": "Nowhere"})
	if !strings.Contains(string(out), `providerName \"Nowhere\": no such provider (configured: Scripted)`) {
		t.Errorf("400 says %s", out)
	}
	h.expect(400, "PATCH", "/api/v1/tasks/"+a.ID, map[string]any{"action": "rerun", "modelId": 5})
	var r wire.Task
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+a.ID, map[string]any{"action": "rerun", "modelId": "scripted-other"}), &r)
	if r.ModelID != "scripted-other" || r.ProviderName != "Scripted" || r.RerunOf != a.ID {
		t.Fatalf("rerun = %+v", r)
	}
	h.waitTask(r.ID, "the end", terminal)
	var other int
	for _, body := range h.llm.Requests("[[rerun]]") {
		if strings.Contains(body, `"model":"scripted-other"`) {
			other++
		}
	}
	if other < 2 {
		t.Errorf("%d requests went to scripted-other", other)
	}
}

// A new task gets a title from its model, off its way; a title the user
// gives is kept, even against a title request answered after it, and the
// title request's tokens count as the task's.
func TestGeneratedTitleAndRename(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	h.llm.Title(`"Quarterly sales summary."` + "\n\nmore")
	var a wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Sum up the sales of the quarter from the sheet [[title]]"}), &a)
	if a.Title != "Sum up the sales of the quarter from the sheet [[title]]" {
		t.Errorf("first title %q", a.Title)
	}
	h.waitTask(a.ID, "its generated title", func(t wire.Task) bool { return t.Title == "Quarterly sales summary" })
	titles := h.llm.Titles()
	if len(titles) != 1 || !strings.Contains(titles[0], `"max_tokens":24`) || !strings.Contains(titles[0], "Sum up the sales") {
		t.Fatalf("title requests: %q", titles)
	}

	// Renamed while the title request is out and the agent waits: the
	// user's title stays; the request's tokens are counted.
	titleGate, runGate := make(chan struct{}), make(chan struct{})
	h.llm.TitleTurn(llmtest.Turn{Msg: llmtest.Text("Generated").Msg, Hold: titleGate})
	h.llm.Script("[[rename]]", llmtest.Turn{Msg: llmtest.Text("Done.").Msg, Hold: runGate}, llmtest.Verdict(true, "Done."))
	var b wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Tidy the desktop [[rename]]"}), &b)
	h.expect(400, "PATCH", "/api/v1/tasks/"+b.ID, map[string]any{"action": "rename", "title": " \n\t"})
	h.expect(400, "PATCH", "/api/v1/tasks/"+b.ID, map[string]any{"action": "rename", "title": 12})
	var renamed wire.Task
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+b.ID, map[string]any{"action": "rename", "title": "  My\ndesk  "}), &renamed)
	if renamed.Title != "My desk" || !renamed.TitleEdited {
		t.Fatalf("renamed: %q edited=%v", renamed.Title, renamed.TitleEdited)
	}
	close(titleGate)
	counted := h.waitTask(b.ID, "the title's tokens", func(t wire.Task) bool { return t.TokenUsage != nil && t.TokenUsage.Total >= 1020 })
	if counted.Title != "My desk" {
		t.Errorf("a generated title replaced the user's: %q", counted.Title)
	}
	close(runGate)
	done := h.waitTask(b.ID, "the end", terminal)
	if done.Title != "My desk" || done.TokenUsage == nil || done.TokenUsage.Total != 3*1020 {
		t.Errorf("ended titled %q with %+v tokens (want the title's and two calls')", done.Title, done.TokenUsage)
	}
	h.expect(404, "PATCH", "/api/v1/tasks/nope", map[string]any{"action": "rename", "title": "x"})

	// Settings' titleFromDescription: no title request.
	if _, err := h.unix.PatchSettings(context.Background(), map[string]any{"titleFromDescription": true}); err != nil {
		t.Fatal(err)
	}
	asked := len(h.llm.Titles())
	var c wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Water the plants [[plain]]"}), &c)
	c = h.waitTask(c.ID, "the end", terminal)
	if n := len(h.llm.Titles()); n != asked || c.Title != "Water the plants [[plain]]" {
		t.Errorf("with titleFromDescription: %d title requests, title %q", n-asked, c.Title)
	}
}
