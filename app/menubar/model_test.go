package menubar

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/wire"
)

func TestSummarize(t *testing.T) {
	q := &wire.Question{ID: "q1", Question: "Which one?"}
	tasks := []wire.Task{
		{ID: "a", Title: "Queued one", Status: "queued"},
		{ID: "b", Title: "Running one", Status: "running"},
		{ID: "c", Title: "Asking one", Status: "running", PendingQuestion: q},
		{ID: "d", Title: "Paused one", Status: "paused"},
		{ID: "e", Title: "Waiting for a VM", Status: "waitingForVM"},
	}
	s := Summarize(tasks, 3)
	if s := Summarize([]wire.Task{{ID: "p", Title: "Plan", Status: "planReview"}, {ID: "w", Title: "Writing", Status: "planning"}}, 3); s.State != Attention ||
		len(s.Agents) != 2 || !s.Agents[0].Waiting || s.Agents[1].Waiting || s.Agents[0].Label() != "Plan — needs you" {
		t.Fatalf("plans: %+v", s)
	}
	if s.State != Attention || s.Running != 2 || s.Paused != 1 || s.Queued != 2 || s.More != 2 {
		t.Fatalf("snapshot = %+v", s)
	}
	if len(s.Agents) != 3 || s.Agents[0].ID != "b" || s.Agents[2].ID != "d" || !s.Agents[1].Waiting || !s.Agents[2].Paused() {
		t.Fatalf("agents = %+v", s.Agents)
	}
	if got := s.Agents[1].Label(); got != "Asking one — needs you" {
		t.Fatalf("label = %q", got)
	}
	if got := s.Headline(); got != "Hivecrew — 2 agents running, 1 paused, 2 queued" {
		t.Fatalf("headline = %q", got)
	}
	if s := Summarize(tasks[:1], 3); s.State != Idle || len(s.Agents) != 1 {
		t.Fatalf("queued only: %+v", s)
	}
	if s := Summarize(nil, 3); s.State != Idle || s.Headline() != "Hivecrew — no agents running" {
		t.Fatalf("nothing: %+v %q", s, s.Headline())
	}
	if s := Summarize(tasks[1:2], 3); s.State != Working {
		t.Fatalf("running: %+v", s)
	}
}

func TestNotices(t *testing.T) {
	sum := "Wrote the report."
	q := &wire.Question{ID: "q1", Question: "Which one?"}
	before := map[string]wire.Task{"a": {ID: "a", Title: "A", Status: "running"}, "b": {ID: "b", Title: "B", Status: "running", PendingQuestion: q}}
	after := map[string]wire.Task{
		"a": {ID: "a", Title: "A", Status: "running", PendingQuestion: q},
		"b": {ID: "b", Title: "B", Status: "running", PendingQuestion: q},
		"c": {ID: "c", Title: "C", Status: "paused", PendingPermission: &wire.Permission{ID: "p", ToolName: "run_shell"}},
		"g": {ID: "g", Title: "G", Status: "planReview"},
	}
	before["g"] = wire.Task{ID: "g", Title: "G", Status: "planning"}
	noPlan := "The model returned an empty plan."
	ended := []wire.Task{{ID: "d", Title: "D", Status: "completed", ResultSummary: &sum}, {ID: "e", Title: "E", Status: "cancelled"}, {ID: "f", Title: "F", Status: "timedOut"},
		{ID: "h", Title: "H", Status: "planFailed", ResultSummary: &noPlan}, {ID: "w", Title: "W", Status: "writebackReview"}}
	got := map[string]Notice{}
	for _, n := range Notices(before, after, ended) {
		got[n.TaskID] = n
	}
	if got["g"].Title != "G: plan ready" || got["h"].Title != "Task failed to plan" || got["h"].Body != "H: "+noPlan ||
		got["w"].Title != "W: changes to review" {
		t.Fatalf("plan notices = %+v", got)
	}
	if again := Notices(after, after, nil); len(again) != 0 {
		t.Fatalf("a plan still under review was notified again: %+v", again)
	}
	if len(got) != 7 || got["a"].Body != "Which one?" || got["c"].Body != "Allow run_shell?" || got["d"].Body != "D: Wrote the report." || got["f"].Title != "Task timed out" {
		t.Fatalf("notices = %+v", got)
	}
	if _, ok := got["b"]; ok {
		t.Fatal("a question already shown was notified again")
	}
	// A provider's safety check says what it checked.
	check := map[string]wire.Task{"s": {ID: "s", Title: "S", Status: "running", PendingPermission: &wire.Permission{ID: "p2", ToolName: wire.PermissionSafetyCheck,
		Details: `Safety check on "click at (640, 400)": malicious_instructions: The page says to ignore the user.`}}}
	if n := Notices(map[string]wire.Task{}, check, nil); len(n) != 1 || !strings.HasPrefix(n[0].Body, `Safety check on "click at (640, 400)"`) || n[0].Title != "S needs your approval" {
		t.Fatalf("safety check notice %+v", n)
	}
	if _, ok := got["e"]; ok {
		t.Fatal("a task the user cancelled was notified")
	}

	// Only the events the user wants (notifyEvents).
	all := Notices(before, after, ended)
	if n := Wanted(all, config.NotifyEventNames); len(n) != len(all) {
		t.Fatalf("all events wanted: %d of %d notices", len(n), len(all))
	}
	if n := Wanted(all, nil); len(n) != 0 {
		t.Fatalf("no event wanted: %+v", n)
	}
	some := map[string]Notice{}
	for _, n := range Wanted(all, []string{config.NotifyQuestion, config.NotifyFailed}) {
		some[n.TaskID] = n
	}
	if len(some) != 3 || some["a"].Body != "Which one?" || some["f"].Title != "Task timed out" || some["h"].Title != "Task failed to plan" {
		t.Fatalf("questions and failures only: %+v", some)
	}
	for _, n := range Wanted(all, []string{config.NotifyCompleted, config.NotifyPermission, config.NotifyPlan, config.NotifyReview}) {
		if n.TaskID == "a" || n.TaskID == "f" || n.TaskID == "h" {
			t.Fatalf("a notice of an event turned off: %+v", n)
		}
	}
}

func TestIcons(t *testing.T) {
	alphaAt := func(s State, template bool, x, y int) (uint32, uint32) {
		img, err := png.Decode(bytes.NewReader(Icon(s, template)))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 44 || b.Dy() != 44 {
			t.Fatalf("icon is %v", b)
		}
		r, _, _, a := img.At(x, y).RGBA()
		return r, a
	}
	if _, a := alphaAt(Idle, true, 22, 22); a != 0 {
		t.Error("the idle icon is not hollow")
	}
	if _, a := alphaAt(Idle, true, 22, 4); a == 0 {
		t.Error("the idle icon has no outline")
	}
	if _, a := alphaAt(Working, true, 22, 22); a == 0 {
		t.Error("the working icon is not filled")
	}
	if r, a := alphaAt(Attention, false, 32, 12); a == 0 || r < 0xC000 {
		t.Error("the attention icon has no red dot")
	}
	if _, a := alphaAt(Attention, true, 32, 12); a != 0 {
		t.Error("the attention template icon does not cut out its dot")
	}
}

func TestPresetEntries(t *testing.T) {
	long := strings.Repeat("n", 50)
	presets := []wire.Preset{
		{ID: "a", Name: "Weekly digest", Task: wire.CreateTask{Description: "Write the\n\nweekly   digest."}},
		{ID: "b", Name: long, Task: wire.CreateTask{Description: strings.Repeat("d", 200)}},
		{ID: "c", Name: "Third"},
	}
	got := PresetEntries(presets, 2)
	if len(got) != 2 || got[0].Label != "Weekly digest" || got[0].Tooltip != "Write the weekly digest." || got[0].Preset.ID != "a" {
		t.Fatalf("entries = %+v", got)
	}
	if r := []rune(got[1].Label); len(r) != 40 || r[39] != '…' || len([]rune(got[1].Tooltip)) != 120 {
		t.Fatalf("long entry = %+v", got[1])
	}
	if got := PresetEntries(nil, 10); len(got) != 0 {
		t.Fatalf("no presets: %+v", got)
	}
}

func TestScheduleEntries(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Saturday 28 March 2026, 22:00 in Berlin; the clocks go forward that
	// night (a day of 23 hours is still "tomorrow").
	now := time.Date(2026, 3, 28, 22, 0, 0, 0, berlin)
	at := func(d, h, m int) *time.Time { v := time.Date(2026, 3, d, h, m, 0, 0, berlin).UTC(); return &v }
	long := strings.Repeat("A very long schedule title ", 3)
	schedules := []wire.Schedule{
		{ID: "week", Title: "Weekly review", IsEnabled: true, NextRunAt: at(31, 8, 0), Description: "Review\n\nthe   week"},
		{ID: "off", Title: "Turned off", IsEnabled: false, NextRunAt: at(28, 23, 0)},
		{ID: "done", Title: "Ran once", IsEnabled: true},
		{ID: "tomorrow", Title: "Morning report", IsEnabled: true, NextRunAt: at(29, 9, 30)},
		{ID: "today", Title: long, IsEnabled: true, NextRunAt: at(28, 23, 15)},
		{ID: "later", Title: "Quarterly", IsEnabled: true, NextRunAt: at(35, 7, 0)}, // 4 April
	}
	got := ScheduleEntries(schedules, now, berlin, 3)
	var labels []string
	for _, e := range got {
		labels = append(labels, e.ID+": "+e.Label)
	}
	want := []string{
		"today: A very long schedule title A very long… — today 23:15",
		"tomorrow: Morning report — tomorrow 09:30",
		"week: Weekly review — Tue 08:00",
	}
	if strings.Join(labels, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(labels, "\n"), strings.Join(want, "\n"))
	}
	if got[2].Tooltip != "Review the week" {
		t.Fatalf("tooltip %q", got[2].Tooltip)
	}
	all := ScheduleEntries(schedules, now, berlin, 10)
	if len(all) != 4 || all[3].Label != "Quarterly — 4 Apr 07:00" {
		t.Fatalf("all entries: %+v", all)
	}
	if len(ScheduleEntries(nil, now, berlin, 5)) != 0 {
		t.Fatal("entries of no schedules")
	}
}

// TestResultEntries: Recent Results lists finished tasks that have output
// files, newest first as listed, at most the slots, with their file count.
func TestResultEntries(t *testing.T) {
	n := func(i int) *int { return &i }
	task := func(id, title, status string, outputs *int) wire.TaskSummary {
		return wire.TaskSummary{Task: wire.Task{ID: id, Title: title, Status: status, OutputFileCount: outputs}}
	}
	got := ResultEntries([]wire.TaskSummary{
		task("a", "Quarterly summary", "completed", n(2)),
		task("b", "Nothing made", "completed", n(0)),
		task("c", "Still going", "running", n(1)),
		task("d", "Counts unknown", "completed", nil),
		task("e", strings.Repeat("Long title ", 6), "failed", n(1)),
		task("f", "Third", "completed", n(3)),
	}, 2)
	want := []ResultEntry{{TaskID: "a", Label: "Quarterly summary — 2 files"}, {TaskID: "e", Label: "Long title Long title Long title Long t… — 1 file"}}
	if !slices.Equal(got, want) {
		t.Fatalf("ResultEntries = %q\nwant %q", got, want)
	}
}
