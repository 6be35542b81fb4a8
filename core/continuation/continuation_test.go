package continuation

import (
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/store"
)

func TestContextNoteIsBoundedAndBuiltFromTheTrace(t *testing.T) {
	summary := "Wrote the report."
	src := store.Task{ID: "t-1", Title: "Report\nwriter", Description: "Write the report", Status: store.StatusCompleted,
		ResultSummary: &summary, ContextNote: "This task continues an earlier task (t-0)…"}
	var events []store.Event
	for i := range 30 {
		events = append(events,
			store.Event{Type: "tool_call_start", ActivityType: "tool_call", Summary: "run_shell {\"command\":\"step " + string(rune('A'+i%26)) + "\"}"},
			store.Event{Type: "tool_call_result", ActivityType: "tool_result", Summary: "secret-looking output that is not a step"})
	}
	note := ContextNote(src, events, []string{"report.txt"}, []string{"gone.png"})
	for _, want := range []string{"continues an earlier task (t-1), which ended completed", "title: Report writer", "Write the report",
		"Its result: Wrote the report.", "It continued a task of its own", "Its last 20 steps (of 30):", "report.txt", "no longer on disk: gone.png"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "not a step") || strings.Count(note, "- run_shell") != 20 {
		t.Errorf("the note's steps are not the last 20 tool calls:\n%s", note)
	}

	// However big the task, the note is bounded.
	huge := strings.Repeat("é", 1<<20)
	src.Description, src.ResultSummary, src.Title = huge, &huge, huge
	events = nil
	for range 1000 {
		events = append(events, store.Event{Type: "tool_call_start", ActivityType: "tool_call", Summary: huge[:10000]})
	}
	note = ContextNote(src, events, []string{strings.Repeat("n", 255)}, nil)
	if len(note) > MaxContextNote || !strings.Contains(note, "Its last 20 steps") {
		t.Errorf("note of %d bytes, over %d", len(note), MaxContextNote)
	}
	if strings.Count(note, "é…") < 3 {
		t.Errorf("the long texts are not cut at a rune with …:\n%.400s", note)
	}
	note = ContextNote(src, events, []string{strings.Repeat("n", 255), strings.Repeat("m", 9000)}, nil)
	if len(note) > MaxContextNote || !strings.HasSuffix(note, "…") {
		t.Errorf("note of %d bytes, over %d, or not marked as cut", len(note), MaxContextNote)
	}
}

func TestContinuationInputNames(t *testing.T) {
	c := &Continuation{sourceID: "s", note: "note", inputs: []files.Source{
		{Name: flatName("report.txt"), Keep: true}, {Name: flatName("charts/q1.csv"), Keep: true}, {Name: flatName("earlier-report.txt"), Keep: true}}}
	own := []files.Source{{Name: "report.txt"}, {Name: "charts_q1.csv"}, {Name: "earlier-report.txt"}}
	srcs, _ := withContinuation(own, c)
	if got := srcs[3].Name + " " + srcs[5].Name; got != "earlier-2-report.txt earlier-earlier-report.txt" {
		t.Errorf("with earlier-report.txt taken: %s", got)
	}
	c = &Continuation{sourceID: "s", note: "note", inputs: []files.Source{
		{Name: flatName("report.txt"), Keep: true}, {Name: flatName("charts/q1.csv"), Keep: true}, {Name: flatName("earlier-report.txt"), Keep: true}}}
	own = []files.Source{{Name: "report.txt"}, {Name: "charts_q1.csv"}}
	srcs, renamed := withContinuation(own, c)
	var names []string
	for _, s := range srcs {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "report.txt charts_q1.csv earlier-report.txt earlier-charts_q1.csv earlier-earlier-report.txt" {
		t.Errorf("names: %s", got)
	}
	if len(renamed) != 3 || !strings.Contains(noteFor(c, renamed), "charts_q1.csv is earlier-charts_q1.csv") {
		t.Errorf("renamed %v: %s", renamed, noteFor(c, renamed))
	}
	// Names stay valid file names, however deep the outbox path was.
	deep := strings.Repeat("dir/", 80) + "é.txt"
	c = &Continuation{sourceID: "s", inputs: []files.Source{{Name: flatName(deep)}, {Name: flatName(deep)}}}
	srcs, _ = withContinuation([]files.Source{{Name: fitName(flatName(deep))}}, c)
	seen := map[string]bool{}
	for _, s := range srcs {
		if _, err := files.CheckName(s.Name); err != nil || seen[s.Name] || !strings.HasSuffix(s.Name, ".txt") {
			t.Errorf("input %q: %v (or given twice)", s.Name, err)
		}
		seen[s.Name] = true
	}
	var task store.Task
	c.Apply(&task, own)
	if task.ContinuationOfID == nil || *task.ContinuationOfID != "s" || !strings.Contains(task.ContextNote, "renamed") {
		t.Errorf("continued task: %+v", task)
	}
}
