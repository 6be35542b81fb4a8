package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

var taskIDLine = regexp.MustCompile(`^[0-9a-f-]{36}\n$`)

// runTask starts a task and returns its id (what `run` prints).
func (h *helper) runTask(args ...string) string {
	h.t.Helper()
	r := h.ok(append([]string{"run"}, args...)...)
	if !taskIDLine.MatchString(r.stdout) {
		h.t.Fatalf("run printed %q, want a task id", r.stdout)
	}
	return strings.TrimSpace(r.stdout)
}

func TestRunWithoutAProviderSaysHowToAddOne(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	r := h.cli("run", "Summarise the PDF in my inbox.", "--wait")
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("want exit 1 and nothing on stdout: %s", r)
	}
	want := "hivecrew: no LLM provider is configured: add one with `hivecrew providers add --name NAME --base-url URL --api-key KEY`"
	if !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("stderr = %q, want it to start %q", r.stderr, want)
	}
	if l, _ := h.c.ListTasks(context.Background(), client.TaskQuery{}); len(l.Tasks) != 0 {
		t.Fatalf("a task was created: %+v", l.Tasks)
	}
}

func TestProvidersAddLsNeverPrintTheKey(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := llmtest.New(t)
	llm.Models = []string{"scripted", "other"}
	url := llm.URL
	const key = "sk-test-secret-1234"
	r := h.ok("providers", "add", "--name", "Scripted", "--base-url", url, "--api-key", key, "--default", "--model", "scripted")
	if !strings.Contains(r.stdout, "Added provider Scripted") {
		t.Fatalf("add: %s", r)
	}
	ls := h.ok("providers", "ls")
	lines := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("ls: %s", ls)
	}
	for _, want := range []string{"Scripted", url, "scripted", "yes", "set"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("ls row %q lacks %q", lines[1], want)
		}
	}
	js := h.ok("providers", "ls", "--json")
	var list wire.ProviderList
	decodeOne(t, js.stdout, &list)
	if len(list.Providers) != 1 || !list.Providers[0].HasAPIKey || !list.Providers[0].IsDefault || list.Providers[0].DefaultModelID != "scripted" {
		t.Fatalf("ls --json: %+v", list)
	}
	for _, out := range []result{r, ls, js} {
		if strings.Contains(out.stdout+out.stderr, key) || strings.Contains(out.stdout+out.stderr, "1234") {
			t.Fatalf("the API key was printed: %s", out)
		}
	}
	if m := h.ok("providers", "models", "Scripted"); m.stdout != "other\nscripted\n" {
		t.Fatalf("models: %s", m)
	}
	if tr := h.ok("providers", "test", list.Providers[0].ID); !strings.HasPrefix(tr.stdout, "OK (") {
		t.Fatalf("test: %s", tr)
	}
	h.ok("providers", "rm", "Scripted")
	if ls := h.ok("providers", "ls"); !strings.HasPrefix(ls.stdout, "No providers yet") {
		t.Fatalf("ls after rm: %s", ls)
	}
	if r := h.cli("providers", "rm", "Scripted"); r.code != 1 || !strings.HasPrefix(r.stderr, "hivecrew: ") {
		t.Fatalf("rm of a removed provider: %s", r)
	}
}

// TestRunWaitCompletes: the agent writes a file and finishes; run --wait
// exits 0 and prints the status, the verifier's summary and the output
// file, which is in the output directory; when stderr is not a terminal,
// it says each change of status there as a plain line.
func TestRunWaitCompletes(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Write a note.",
		llmtest.Tool("write_file", map[string]any{"path": "outbox/note.txt", "contents": "hello from the agent"}),
		llmtest.Text("I wrote the note."),
		llmtest.Verdict(true, "Wrote outbox/note.txt."),
	)
	out := t.TempDir()
	r := h.cli("run", "Write a note.", "--wait", "--output-dir", out)
	if r.code != 0 || !regexp.MustCompile(`(?m)\A(\d\d:\d\d:\d\d  \S.*\n)+\z`).MatchString(r.stderr) || !strings.Contains(r.stderr, "  Agent started in VM ") {
		t.Fatalf("run --wait: %s", r)
	}
	for _, want := range []string{`(?m)^Status: +completed \(2 steps, \d+:\d\d\)$`, `(?m)^Summary: +Wrote outbox/note\.txt\.$`,
		`(?m)^Outputs: +` + regexp.QuoteMeta(filepath.Join(out, "note.txt")) + ` \(20 B\)$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("result lacks %s:\n%s", want, r.stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "note.txt")); err != nil || string(b) != "hello from the agent" {
		t.Fatalf("output file: %q, %v", b, err)
	}

	// files lists the outputs and downloads them, never overwriting.
	id := regexp.MustCompile(`(?m)^Task: +(\S+)$`).FindStringSubmatch(r.stdout)[1]
	if ls := h.ok("files", id).stdout; !regexp.MustCompile(`(?m)^output +note\.txt +20 B +` + regexp.QuoteMeta(filepath.Join(out, "note.txt")) + `$`).MatchString(ls) {
		t.Errorf("files:\n%s", ls)
	}
	dl := t.TempDir()
	for i, want := range []string{"note.txt", "note (1).txt"} {
		got := h.ok("files", id, "--all", "-o", dl).stdout
		if strings.TrimSpace(got) != filepath.Join(dl, want) {
			t.Errorf("download %d saved %q, want %s", i, got, want)
		}
		if b, err := os.ReadFile(filepath.Join(dl, want)); err != nil || string(b) != "hello from the agent" {
			t.Errorf("downloaded %s: %q, %v", want, b, err)
		}
	}
	if r := h.cli("files", id, "--get", "nope.txt"); r.code != 1 || !strings.Contains(r.stderr, `has no output file "nope.txt" (it has: note.txt)`) {
		t.Errorf("files --get nope.txt: %s", r)
	}
}

// TestRunWaitFailsWithExitCode1: a task the verifier rejects ends failed;
// run --wait prints why and exits 1.
func TestRunWaitFailsWithExitCode1(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	no := llmtest.Verdict(false, "There is no PDF to summarise.")
	h.scripted("Summarise the PDF.", llmtest.Text("Nothing there."), no, llmtest.Text("Still nothing."), no)
	r := h.cli("run", "Summarise the PDF.", "--wait")
	if r.code != 1 || !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, "There is no PDF to summarise.") {
		t.Fatalf("run --wait of a failing task: %s", r)
	}
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Do nothing.", llmtest.Done("Nothing to do.")...)
	r := h.ok("run", "--json", "Do nothing.", "--max-iterations", "5", "--offline", "--allow", "run_shell")
	var created wire.Task
	decodeOne(t, r.stdout, &created)
	if created.ID == "" || created.Description != "Do nothing." || created.MaxIterations != 5 || created.NetworkMode != "offline" ||
		created.ToolPolicy["run_shell"] != "allow" || created.ProviderName != "Scripted" || created.ModelID != "scripted" {
		t.Fatalf("created task: %+v", created)
	}
	// --wait --json: the final task, and only it.
	llm2 := llmtest.New(t)
	llm2.Script("Do nothing again.", llmtest.Done("Nothing to do either.")...)
	h.ok("providers", "add", "--name", "Second", "--base-url", llm2.URL, "--model", "scripted")
	r = h.ok("run", "Do nothing again.", "--provider", "Second", "--wait", "--json")
	var final wire.Task
	decodeOne(t, r.stdout, &final)
	if final.Status != "completed" || final.ResultSummary == nil || *final.ResultSummary != "Nothing to do either." || final.ProviderName != "Second" {
		t.Fatalf("final task: %+v", final)
	}
}

// TestAllowRunsAToolWithoutAsking: run_shell asks by default; --allow
// run_shell lets the task run it at once.
func TestAllowRunsAToolWithoutAsking(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Run a command.",
		llmtest.Tool("run_shell", map[string]any{"command": "echo allowed > outbox/shell.txt"}),
		llmtest.Text("Ran it."), llmtest.Verdict(true, "Ran the command."),
	)
	out := t.TempDir()
	h.ok("run", "Run a command.", "--allow", "run_shell", "--output-dir", out, "--wait")
	if b, err := os.ReadFile(filepath.Join(out, "shell.txt")); err != nil || strings.TrimSpace(string(b)) != "allowed" {
		t.Fatalf("shell.txt: %q, %v", b, err)
	}
}

// TestLsShowLogsExportRerun on a finished task, addressed by id prefix.
func TestLsShowLogsExportRerun(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Write a.txt from the brief.", // the task and its rerun
		llmtest.Tool("write_file", map[string]any{"path": "outbox/a.txt", "contents": "a"}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Wrote a.txt."),
		llmtest.Text("Done again."), llmtest.Verdict(true, "Nothing left."),
	)
	in := filepath.Join(t.TempDir(), "brief.txt")
	if err := os.WriteFile(in, []byte("the brief"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := h.runTask("Write a.txt from the brief.", "--file", in, "--output-dir", t.TempDir())
	h.waitStatus(id, "completed")

	ls := h.ok("ls")
	lines := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], id[:8]+"  completed") ||
		!strings.Contains(lines[1], "Write a.txt from the brief.") {
		t.Fatalf("ls:\n%s", ls.stdout)
	}
	if ls := h.ok("ls", "--status", "running,queued"); !strings.HasPrefix(ls.stdout, "No running or queued tasks.") {
		t.Fatalf("ls --status: %s", ls)
	}
	var list wire.TaskList
	decodeOne(t, h.ok("ls", "--json", "--all").stdout, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != id || list.Total != 1 {
		t.Fatalf("ls --json: %+v", list)
	}

	show := h.ok("show", id[:8])
	for _, want := range []string{"ID: +" + id, "Status: +completed", "Summary: +Wrote a.txt.", "Input files: +brief.txt \\(9 B\\)",
		"Output files: +a.txt \\(1 B\\) saved to .+/a\\.txt", "Provider: +Scripted / scripted", "Description: +Write a.txt from the brief."} {
		if !regexp.MustCompile("(?m)^" + want + "$").MatchString(show.stdout) {
			t.Errorf("show lacks %s:\n%s", want, show.stdout)
		}
	}
	if r := h.cli("show", "zzzz"); r.code != 1 || !strings.Contains(r.stderr, "no task with id zzzz") {
		t.Fatalf("show of an unknown id: %s", r)
	}

	logs := h.ok("logs", id[:6])
	if !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  tool_call_result  `).MatchString(logs.stdout) ||
		!regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  status_change     Wrote a.txt.$`).MatchString(logs.stdout) {
		t.Fatalf("logs:\n%s", logs.stdout)
	}
	var act wire.Activity
	decodeOne(t, h.ok("logs", "--json", id).stdout, &act)
	if act.Total == 0 || int64(len(act.Events)) != act.Total || act.Events[len(act.Events)-1].Data.Status != "completed" {
		t.Fatalf("logs --json: %+v", act)
	}
	// logs -f of a finished task replays and ends.
	if f := h.ok("logs", "-f", id); f.stdout != logs.stdout {
		t.Fatalf("logs -f of a finished task:\n%s\nwant:\n%s", f.stdout, logs.stdout)
	}

	md := h.ok("export", id, "--format", "md")
	if !strings.Contains(md.stdout, "Wrote a.txt.") {
		t.Fatalf("export md:\n%s", md.stdout)
	}
	file := filepath.Join(t.TempDir(), "replay.html")
	h.ok("export", id, "-o", file)
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(strings.ToLower(string(b)), "<html") {
		t.Fatalf("export html: %.200q, %v", b, err)
	}
	if r := h.cli("export", id, "--format", "pdf"); r.code != 2 {
		t.Fatalf("export --format pdf: %s", r)
	}

	again := strings.TrimSpace(h.ok("rerun", id[:8]).stdout)
	if !taskIDLine.MatchString(again+"\n") || again == id {
		t.Fatalf("rerun printed %q", again)
	}
	if tk := h.waitStatus(again, "completed"); tk.RerunOf != id {
		t.Fatalf("rerun: %+v", tk)
	}
}

// TestCancelARunningTask and follow it with logs -f to its end.
func TestCancelARunningTask(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	defer close(hold)
	llm := h.scripted("Wait forever.", llmtest.Turn{Msg: llmtest.Text("never answered").Msg, Hold: hold})
	id := h.runTask("Wait forever.")
	waitFor(t, "the LLM request", func() bool { return len(llm.Requests("Wait forever.")) == 1 })
	h.waitStatus(id, "running")

	follow := h.cliAsync("logs", "-f", id)
	r := h.ok("cancel", id)
	if !strings.HasPrefix(r.stdout, id+"  ") {
		t.Fatalf("cancel: %s", r)
	}
	h.waitStatus(id, "cancelled")
	var f result
	select {
	case f = <-follow:
	case <-time.After(cliTimeout):
		t.Fatal("logs -f did not end with the task")
	}
	if f.code != 0 || !strings.Contains(f.stdout, "status_change     ") || !strings.Contains(lastLine2(f.stdout), "status_change") {
		t.Fatalf("logs -f: %s", f)
	}
	if r := h.cli("cancel", id); r.code != 1 || !strings.HasPrefix(r.stderr, "hivecrew: ") {
		t.Fatalf("cancel of a cancelled task: %s", r)
	}
}

func lastLine2(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestStopAll(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	defer close(hold)
	never := llmtest.Turn{Msg: llmtest.Text("never").Msg, Hold: hold}
	llm := h.scripted("First.", never)
	llm.Script("Second.", never)
	a := h.runTask("First.")
	b := h.runTask("Second.")
	waitFor(t, "both LLM requests", func() bool { return len(llm.Requests("First."))+len(llm.Requests("Second.")) == 2 })
	r := h.ok("stop-all")
	if !regexp.MustCompile(`^Stopped 2 tasks in \d+ ms\.\n`).MatchString(r.stdout) || !strings.Contains(r.stdout, a) || !strings.Contains(r.stdout, b) {
		t.Fatalf("stop-all: %s", r)
	}
	h.waitStatus(a, "cancelled")
	h.waitStatus(b, "cancelled")
	var none wire.StopAll
	decodeOne(t, h.ok("stop-all", "--json").stdout, &none)
	if len(none.Stopped) != 0 {
		t.Fatalf("second stop-all: %+v", none)
	}
}

// TestAnswerApproveDeny: a question answered with `answer`, then two
// run_shell calls, one approved and one denied.
func TestAnswerApproveDeny(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := h.scripted("Pick a report.",
		llmtest.Tool("ask_multiple_choice", map[string]any{"question": "Which report?", "options": []string{"Q1", "Q2"}}),
		llmtest.Tool("run_shell", map[string]any{"command": "echo approved > outbox/ok.txt"}),
		llmtest.Tool("run_shell", map[string]any{"command": "echo denied > outbox/no.txt"}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Did what was allowed."),
	)
	out := t.TempDir()
	id := h.runTask("Pick a report.", "--output-dir", out)
	if r := h.cli("approve", id); r.code != 1 || !strings.Contains(r.stderr, "no pending permission request") {
		t.Fatalf("approve without a request: %s", r)
	}
	waitFor(t, "the question", func() bool { return h.task(id).PendingQuestion != nil })
	show := h.ok("show", id)
	if !strings.Contains(show.stdout, "Question:") || !strings.Contains(show.stdout, "Which report?") || !strings.Contains(show.stdout, "choices: Q1 | Q2") {
		t.Fatalf("show with a question:\n%s", show.stdout)
	}
	if r := h.ok("answer", id[:8], "Q2"); !strings.Contains(r.stdout, "Q2") {
		t.Fatalf("answer: %s", r)
	}
	waitFor(t, "the permission request", func() bool { return h.task(id).PendingPermission != nil })
	if !strings.Contains(llm.Requests("Pick a report.")[1], "The user answered: Q2") {
		t.Fatal("the answer did not reach the model")
	}
	if r := h.cli("answer", id, "again"); r.code != 1 || !strings.Contains(r.stderr, "no pending question") {
		t.Fatalf("answer without a question: %s", r)
	}
	if !strings.Contains(h.ok("show", id).stdout, "Permission:") {
		t.Fatal("show does not list the permission request")
	}
	h.ok("approve", id)
	waitFor(t, "the second permission request", func() bool {
		p := h.task(id).PendingPermission
		return p != nil && strings.Contains(p.Details, "denied")
	})
	h.ok("deny", id)
	h.waitStatus(id, "completed")
	if b, err := os.ReadFile(filepath.Join(out, "ok.txt")); err != nil || strings.TrimSpace(string(b)) != "approved" {
		t.Fatalf("approved command: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "no.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: %v", err)
	}
}

// TestSayPauseResume: instructions reach the model's next turn; pause and
// resume change the status.
func TestSayPauseResume(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	wait := llmtest.Tool("wait", map[string]any{"seconds": 0.1})
	wait.Hold = hold
	llm := h.scripted("Work slowly.", wait, llmtest.Text("Done."), llmtest.Verdict(true, "Followed the instructions."))
	id := h.runTask("Work slowly.")
	waitFor(t, "the first LLM request", func() bool { return len(llm.Requests("Work slowly.")) == 1 })
	h.waitStatus(id, "running")
	h.ok("say", id, "Use", "the blue folder.")
	if r := h.ok("pause", id); !strings.Contains(r.stdout, id) {
		t.Fatalf("pause: %s", r)
	}
	h.waitStatus(id, "paused")
	release()
	h.ok("resume", id, "--instructions", "Go on.")
	h.waitStatus(id, "completed")
	reqs := llm.Requests("Work slowly.")
	if len(reqs) < 2 || !strings.Contains(reqs[1], "Use the blue folder.") || !strings.Contains(reqs[1], "Go on.") {
		t.Fatalf("instructions did not reach the model: %d requests", len(reqs))
	}
}

func TestRunFollowPrintsEventsThenTheResult(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	llm := h.scripted("Click the button.", llmtest.Tool("mouse_click", map[string]any{"x": 10, "y": 20}), llmtest.Text("Clicked."), llmtest.Verdict(true, "Clicked the button."))
	llm.Script("Click again.", llmtest.Text("Again."), llmtest.Verdict(true, "Clicked again."))
	r := h.ok("run", "--follow", "Click the button.")
	lines := strings.Split(r.stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, "  tool_call_result  ") && strings.Contains(l, "mouse_click")
	})
	j := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Summary:") })
	if i < 0 || j < i || !strings.Contains(lines[j], "Clicked the button.") {
		t.Fatalf("run --follow:\n%s", r.stdout)
	}
	r = h.ok("run", "--follow", "--json", "Click again.")
	dec := jsonLines(t, r.stdout)
	if len(dec) < 3 || !strings.Contains(dec[len(dec)-1], `"status": "`) {
		t.Fatalf("run --follow --json:\n%s", r.stdout)
	}
}

// jsonLines splits the output of --follow --json: one event a line, then
// the indented task.
func jsonLines(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "{" {
			return append(out, strings.Join(lines[i:], "\n"))
		}
		var ev wire.Event
		decodeOne(t, l, &ev)
		if ev.Type == "" || ev.Seq == 0 {
			t.Fatalf("not an event: %s", l)
		}
		out = append(out, l)
	}
	return out
}

func TestAPIKeyCreatePrintsOnlyTheKey(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	r := h.ok("apikey", "create", "--name", "scripts")
	if !regexp.MustCompile(`^hc_\S+\n$`).MatchString(r.stdout) {
		t.Fatalf("apikey create printed %q", r.stdout)
	}
	key := strings.TrimSpace(r.stdout)
	ls := h.ok("apikey", "ls")
	if strings.Contains(ls.stdout, key) || !strings.Contains(ls.stdout, "scripts") {
		t.Fatalf("apikey ls: %s", ls)
	}
	var keys wire.APIKeyList
	decodeOne(t, h.ok("apikey", "ls", "--json").stdout, &keys)
	if len(keys.Keys) != 1 || !strings.HasPrefix(key, keys.Keys[0].Prefix) {
		t.Fatalf("apikey ls --json: %+v", keys)
	}
	h.ok("apikey", "revoke", keys.Keys[0].Prefix)
	decodeOne(t, h.ok("apikey", "ls", "--json").stdout, &keys)
	if keys.Keys[0].RevokedAt == nil {
		t.Fatalf("not revoked: %+v", keys.Keys[0])
	}
	// A default name.
	if r := h.ok("apikey", "create"); !strings.HasPrefix(r.stdout, "hc_") {
		t.Fatalf("apikey create without a name: %s", r)
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("every day.", llmtest.Done("Reported.")...)
	r := h.ok("schedules", "add", "--title", "Morning report", "Write the morning report.", "--daily", "09:30", "--tz", "Europe/Berlin")
	if !regexp.MustCompile(`^Added schedule [0-9a-f]{8}: daily 09:30 \(Europe/Berlin\), next run \d{4}-\d\d-\d\d 09:30 CES?T\.\n$`).MatchString(r.stdout) {
		t.Fatalf("schedules add: %s", r)
	}
	ls := h.ok("schedules", "ls")
	lines := strings.Split(strings.TrimSpace(ls.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "NEXT RUN") ||
		!regexp.MustCompile(`Morning report\s+daily 09:30 \(Europe/Berlin\)\s+\d{4}-\d\d-\d\d 09:30 CES?T\s+-\s+yes$`).MatchString(lines[1]) {
		t.Fatalf("schedules ls:\n%s", ls.stdout)
	}
	r = h.ok("schedules", "add", "--json", "Weekly review.", "--weekly", "mon,wed@08:05", "--plan-first", "--timeout", "15", "--env", "MODE=quiet")
	var sc wire.Schedule
	decodeOne(t, r.stdout, &sc)
	if sc.Recurrence == nil || !slices.Equal(sc.Recurrence.DaysOfWeek, []int{2, 4}) || sc.Recurrence.Hour != 8 || sc.Recurrence.Minute != 5 || sc.NextRunAt == nil ||
		!sc.PlanFirst || sc.TimeoutMinutes != 15 || sc.Provisioning == nil || sc.Provisioning.Environment["MODE"] != "quiet" {
		t.Fatalf("weekly schedule: %+v", sc)
	}
	// edit changes only what its flags say.
	r = h.ok("schedules", "edit", sc.ID[:8], "--title", "Daily review", "--daily", "07:15", "--plan-first=false", "--max-iterations", "12")
	if !regexp.MustCompile(`^Changed schedule [0-9a-f]{8}: daily 07:15 \(.+\), next run \d{4}-\d\d-\d\d 07:15 `).MatchString(r.stdout) {
		t.Fatalf("schedules edit: %s", r)
	}
	sc = wire.Schedule{ID: sc.ID} // fields the answer leaves out are zero
	decodeOne(t, h.ok("schedules", "edit", "--json", sc.ID, "Weekly review, every day.").stdout, &sc)
	if sc.Title != "Daily review" || sc.Description != "Weekly review, every day." || sc.PlanFirst || sc.TimeoutMinutes != 15 || sc.MaxIterations != 12 ||
		sc.Provisioning == nil || sc.Provisioning.Environment["MODE"] != "quiet" || sc.Recurrence == nil || sc.Recurrence.Type != "daily" || sc.Recurrence.Hour != 7 {
		t.Fatalf("after edit: %+v", sc)
	}
	if r := h.cli("schedules", "edit", sc.ID, "--file", "x.pdf"); r.code != 2 || !strings.Contains(r.stderr, "input files are given when it is added") {
		t.Fatalf("edit --file: %s", r)
	}
	if r := h.cli("schedules", "edit", sc.ID); r.code != 2 || !strings.Contains(r.stderr, "nothing to change") {
		t.Fatalf("edit with nothing: %s", r)
	}
	r = h.ok("schedules", "off", sc.ID[:8])
	if !strings.Contains(r.stdout, "Turned schedule "+sc.ID[:8]+" off") {
		t.Fatalf("schedules off: %s", r)
	}
	if ls := h.ok("schedules", "ls"); !regexp.MustCompile(`(?m)Daily review\s+daily 07:15 \([^)]+\)\s+off\s+-\s+no$`).MatchString(strings.TrimSpace(ls.stdout)) {
		t.Fatalf("ls after off:\n%s", ls.stdout)
	}
	if r := h.ok("schedules", "on", sc.ID[:8]); !regexp.MustCompile(`Turned schedule [0-9a-f]{8} on: daily 07:15 .*next run \d{4}`).MatchString(r.stdout) {
		t.Fatalf("schedules on: %s", r)
	}
	task := strings.TrimSpace(h.ok("schedules", "run", sc.ID[:8]).stdout)
	if tk := h.waitStatus(task, "completed"); tk.ScheduleID != sc.ID || tk.TimeoutMinutes != 15 || tk.MaxIterations != 12 || tk.PlanFirst {
		t.Fatalf("scheduled task: %+v", tk)
	}
	h.ok("schedules", "rm", sc.ID)
	if ls := h.ok("schedules", "ls"); strings.Contains(ls.stdout, "Weekly review") {
		t.Fatalf("ls after rm:\n%s", ls.stdout)
	}
	for _, bad := range [][]string{
		{"schedules", "add", "No timing."},
		{"schedules", "add", "Two timings.", "--daily", "09:00", "--monthly", "1@09:00"},
		{"schedules", "add", "Bad time.", "--daily", "25:00"},
		{"schedules", "add", "Bad day.", "--weekly", "funday@09:00"},
	} {
		if r := h.cli(bad...); r.code != 2 || !strings.Contains(r.stderr, "(`hivecrew help schedules add` lists its flags)") {
			t.Errorf("%q: %s", bad, r)
		}
	}
}

func TestParseDays(t *testing.T) {
	for in, want := range map[string][]int{
		"mon,wed": {2, 4}, "sun": {1}, "Saturday": {7}, "mon-fri": {2, 3, 4, 5, 6}, "fri-mon": {1, 2, 6, 7}, "1,7": {1, 7}, "tue,tue": {3},
	} {
		if got, err := parseDays(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mo", "8", "mon,,wed", "xyz-fri"} {
		if got, err := parseDays(in); err == nil {
			t.Errorf("parseDays(%q) = %v, want an error", in, got)
		}
	}
}

func TestTemplatesVMsStatusVersion(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	tl := h.ok("templates", "ls")
	if !regexp.MustCompile(`(?m)^host\s+Host desktop\s+linux\s+host\s+.*yes$`).MatchString(tl.stdout) {
		t.Fatalf("templates ls:\n%s", tl.stdout)
	}
	var vms wire.VMList
	decodeOne(t, h.ok("vms", "ls", "--json").stdout, &vms)
	st := h.ok("status")
	if !strings.Contains(st.stdout, "Helper:   healthy, version") || !strings.Contains(st.stdout, "Backend:  fake") || !strings.Contains(st.stdout, h.home) {
		t.Fatalf("status:\n%s", st.stdout)
	}
	var s wire.Status
	decodeOne(t, h.ok("--json", "status").stdout, &s)
	if s.Status != "healthy" || s.Backend != "fake" {
		t.Fatalf("status --json: %+v", s)
	}
	if v := h.ok("version"); !strings.HasPrefix(v.stdout, "hivecrew ") {
		t.Fatalf("version: %s", v)
	}
	if r := h.cli("vms", "stop", "vm-nope"); r.code != 1 || !strings.HasPrefix(r.stderr, "hivecrew: ") {
		t.Fatalf("vms stop of an unknown vm: %s", r)
	}
	if r := h.ok("open", "--print"); !strings.HasPrefix(r.stdout, "http://127.0.0.1:") || !strings.Contains(r.stdout, "/login") {
		t.Fatalf("open --print: %s", r)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--bogus", "x"},
		{"run"},
		{"run", "x", "--wait", "--follow"},
		{"ls", "--limit", "many"},
		{"show"},
		{"show", "a", "b"},
		{"nosuchcommand"},
		{"providers"},
		{"providers", "add", "--name", "x"},
		{"providers", "add", "--name", "x", "--type", "gemini"},
		{"providers", "edit", "x"},
		{"schedules", "frob"},
	} {
		var out, errOut strings.Builder
		code := run(args, &out, &errOut)
		// One line says what is wrong, the next where the flags are (the
		// whole usage only for an unknown command).
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		hint := len(lines) == 2 && strings.HasPrefix(lines[1], "(`hivecrew help "+args[0])
		if args[0] == "nosuchcommand" {
			hint = strings.Contains(errOut.String(), "usage:")
		}
		if code != 2 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "hivecrew: ") || !hint {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	// A flag value of the wrong kind is said in words.
	var flagOut, flagErr strings.Builder
	if code := run([]string{"run", "--timeout", "0.5", "x"}, &flagOut, &flagErr); code != 2 || !strings.HasPrefix(flagErr.String(), "hivecrew: --timeout takes a whole number (MINUTES), not \"0.5\"\n") {
		t.Errorf("--timeout 0.5: exit %d, stderr %q", code, flagErr.String())
	}
	// No command is the menu-bar app: without a session bus (as here) it
	// says why it cannot show, and exits 1 without starting anything.
	var bar, barErr strings.Builder
	if code := run(nil, &bar, &barErr); code != 1 || !strings.Contains(barErr.String(), "the menu-bar icon cannot be shown: no D-Bus session bus") {
		t.Errorf("no command: exit %d, stderr %q", code, barErr.String())
	}
	var out, errOut strings.Builder
	if code := run([]string{"run", "-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "usage: hivecrew run") || !strings.Contains(out.String(), "-follow") {
		t.Fatalf("run -h: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"help", "schedules", "add"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-weekly") {
		t.Fatalf("help schedules add: exit %d\n%s", code, out.String())
	}
}

// TestStatusDoesNotStartTheHelper and every other command names the helper
// it could not find.
func TestNoHelper(t *testing.T) {
	home := daemontest.NewHome(t)
	t.Setenv("PATH", t.TempDir())
	var out, errOut strings.Builder
	if code := run([]string{"status", "--home", home}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "is not running") {
		t.Fatalf("status: exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"ls", "--home", home}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "hivecrew-helper was not found") {
		t.Fatalf("ls: exit %d: %s", code, errOut.String())
	}
}

// TestRunWaitSaysWhenTheTaskNeedsTheUser: while run --wait waits, a
// question and a permission request are announced on stderr with the
// command that answers them; an output saved under a collision-safe name is
// printed with that name.
func TestRunWaitSaysWhenTheTaskNeedsTheUser(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Ask first.",
		llmtest.Tool("ask_text_question", map[string]any{"question": "Which colour?"}),
		llmtest.Tool("run_shell", map[string]any{"command": "echo blue > outbox/colour.txt"}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Wrote the colour."))
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "colour.txt"), []byte("taken"), 0o600)
	done := h.cliAsync("run", "Ask first.", "--wait", "--output-dir", out)
	var id string
	waitFor(t, "the question", func() bool {
		l, err := h.c.ListTasks(context.Background(), client.TaskQuery{Limit: 1})
		if err != nil || len(l.Tasks) == 0 {
			return false
		}
		id = l.Tasks[0].ID
		return h.task(id).PendingQuestion != nil
	})
	h.ok("answer", id, "blue")
	waitFor(t, "the permission request", func() bool { return h.task(id).PendingPermission != nil })
	h.ok("approve", id)
	r := <-done
	if r.code != 0 {
		t.Fatalf("run --wait: %s", r)
	}
	short := id[:8]
	for _, want := range []string{"The agent asks: Which colour?", "hivecrew answer " + short, "Approve run_shell?", "hivecrew approve " + short} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, filepath.Join(out, "colour (1).txt")) {
		t.Errorf("the output's saved name is not printed:\n%s", r.stdout)
	}
}

// TestAttention: which events ask the user to act, and which do not.
func TestAttention(t *testing.T) {
	id := "0123456789abcdef"
	for _, c := range []struct {
		ev   wire.Event
		want string
	}{
		{wire.Event{Type: "status_change", Data: wire.EventData{Status: "paused", Summary: "paused: LLM error: the provider could not be reached"}}, "hivecrew resume 01234567"},
		{wire.Event{Type: "status_change", Data: wire.EventData{Status: "paused", Summary: "paused: the agent asks for help: log in"}}, "the agent asks for help"},
		{wire.Event{Type: "status_change", Data: wire.EventData{Status: "paused", Summary: "paused: paused by the user"}}, ""},
		{wire.Event{Type: "status_change", Data: wire.EventData{Status: "paused", Summary: "paused: the user is in control"}}, ""},
		{wire.Event{Type: "status_change", Data: wire.EventData{Status: "running", Summary: "running"}}, ""},
		{wire.Event{Type: "question", Data: wire.EventData{ActivityType: "user_answer", Summary: "Answer: blue"}}, ""},
		{wire.Event{Type: "tool_call_result", Data: wire.EventData{Summary: "mouse_click Done."}}, ""},
	} {
		got := attention(id, c.ev)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("attention(%+v) = %q, want it to contain %q", c.ev, got, c.want)
		}
	}
}

// TestModelTextCannotDriveTheTerminal: a summary that carries terminal
// escapes (ESC, BEL, a bidi override), as a prompt-injected model may
// write, is printed with them shown, never sent raw to the user's terminal.
func TestModelTextCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Say something.",
		llmtest.Text("Done."),
		llmtest.Verdict(true, "All good\x1b]0;pwned\x07\x1b[2J and \u202eexe.txt"),
	)
	r := h.cli("run", "Say something.", "--wait")
	if r.code != 0 {
		t.Fatalf("run --wait: %s", r)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
		t.Fatalf("raw control characters reached the terminal: %q", r.stdout)
	}
	if !strings.Contains(r.stdout, `All good\x1b]0;pwned\x07\x1b[2J and \u202eexe.txt`) {
		t.Fatalf("the summary is not shown with its escapes spelled out:\n%s", r.stdout)
	}
}

// TestOutputDirIsCheckedAtSubmit: an output folder where files would act
// on the system (a system location, a home folder's top, a hidden folder)
// is refused when the task is submitted, before any VM runs.
func TestOutputDirIsCheckedAtSubmit(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Write a note.", llmtest.Text("Done."), llmtest.Verdict(true, "Done."))
	home, _ := os.UserHomeDir()
	for _, dir := range []string{"/etc/cron.d", home, filepath.Join(home, ".config", "autostart"), "/"} {
		r := h.cli("run", "Write a note.", "--output-dir", dir)
		if r.code == 0 || !strings.Contains(r.stderr, "output folder") {
			t.Errorf("run --output-dir %s: %s", dir, r)
		}
	}
	if r := h.cli("ls"); strings.Contains(r.stdout, "Write a note") {
		t.Errorf("a refused task was queued:\n%s", r.stdout)
	}
}

// TestCappedNamesWhatTheHostEnforces: vms ls names the capped resources,
// a shared account is not counted as a cap, and a VM that never started
// shows "-".
func TestCappedNamesWhatTheHostEnforces(t *testing.T) {
	for _, c := range []struct {
		l    *wire.VMLimits
		want string
	}{
		{nil, "-"},
		{&wire.VMLimits{}, "none"},
		{&wire.VMLimits{Processes: "cgroup v1 pids.max 1024", Memory: "cgroup v1 memory.limit_in_bytes 1024 MB", CPU: "cgroup v1 cpu.cfs_quota_us 1 CPUs", UID: "per-VM uid 2000000001"}, "procs mem cpu uid"},
		{&wire.VMLimits{Memory: "rlimit DATA 4096 MB per process", UID: "shared account hivecrew-sandbox (uid 999)"}, "mem"},
	} {
		if got := capped(c.l); got != c.want {
			t.Errorf("capped(%+v) = %q, want %q", c.l, got, c.want)
		}
	}
}

// TestRunCompareAndTaskOptions: --compare and --copies run one task on
// several models as one batch (--wait prints every result, the model
// first); --allow-host and --reasoning reach the task; bad values are
// usage errors.
func TestRunCompareAndTaskOptions(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Compare me.", llmtest.Done("Compared.")...)
	r := h.ok("run", "Compare me.", "--compare", "other-model", "--copies", "2", "--wait")
	if strings.Count(r.stdout, "Model:    ") != 4 || strings.Count(r.stdout, "other-model (Scripted)") != 2 ||
		strings.Count(r.stdout, "scripted (Scripted)") != 2 || strings.Count(r.stdout, "completed") != 4 {
		t.Fatalf("compare --wait:\n%s", r.stdout)
	}
	var list wire.TaskList
	decodeOne(t, h.ok("ls", "--json").stdout, &list)
	batches := map[string]int{}
	for _, task := range list.Tasks {
		batches[task.BatchID]++
	}
	if len(list.Tasks) != 4 || len(batches) != 1 || batches[""] != 0 {
		t.Fatalf("the four tasks are not one batch: %v", batches)
	}
	var created wire.Task
	decodeOne(t, h.ok("run", "--json", "Reach the mirror.", "--allow-host", "deb.debian.org", "--allow-host", "10.1.0.0/16", "--reasoning", "high").stdout, &created)
	if strings.Join(created.AllowHosts, ",") != "deb.debian.org,10.1.0.0/16" || created.ReasoningEffort == nil || *created.ReasoningEffort != "high" {
		t.Fatalf("created task: %+v", created)
	}
	for _, bad := range [][]string{
		{"run", "x", "--copies", "9"},
		{"run", "x", "--compare", "m", "--follow"},
		{"run", "x", "--allow-host", "not a host"},
		{"run", "x", "--reasoning", "extreme"},
	} {
		if r := h.cli(bad...); r.code == 0 {
			t.Errorf("%v: exit 0", bad)
		}
	}
}

// TestTaskTextFromAFileOrStdin: a task too long for the command line comes
// from --description-file or stdin ("-"); over the helper's limit it is
// refused before anything is sent, saying the limit; a relative
// --output-dir is this directory's, not the helper's.
func TestTaskTextFromAFileOrStdin(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("[[from file]]")
	dir := t.TempDir()
	long := "Summarise the notes below. [[from file]]\n" + strings.Repeat("A line of notes.\n", 4000) // 68 KB
	os.WriteFile(filepath.Join(dir, "task.txt"), []byte(long), 0o644)
	id := strings.TrimSpace(h.ok("run", "--description-file", filepath.Join(dir, "task.txt")).stdout)
	if got := h.task(id).Description; got != strings.TrimSpace(long) {
		t.Fatalf("description from the file: %d bytes, want %d", len(got), len(strings.TrimSpace(long)))
	}

	var out, errOut strings.Builder
	if code := runWith([]string{"run", "-", "--home", h.home}, strings.NewReader("Task from stdin [[stdin]]\n"), &out, &errOut); code != 0 {
		t.Fatalf("run -: exit %d: %s", code, errOut.String())
	}
	if got := h.task(strings.TrimSpace(out.String())).Description; got != "Task from stdin [[stdin]]" {
		t.Fatalf("description from stdin: %q", got)
	}
	if !strings.Contains(errOut.String(), "Follow it with `hivecrew logs -f ") {
		t.Errorf("run says nothing of what to do next: %q", errOut.String())
	}

	os.WriteFile(filepath.Join(dir, "huge.txt"), bytes.Repeat([]byte("x"), 100_001), 0o644)
	if r := h.cli("run", "--description-file", filepath.Join(dir, "huge.txt")); r.code != 1 || !strings.Contains(r.stderr, "over the limit of 100000 bytes") {
		t.Fatalf("a task over the limit: %s", r)
	}
	if r := h.cli("run", "--description-file", filepath.Join(dir, "task.txt"), "and more"); r.code != 1 || !strings.Contains(r.stderr, "not both") {
		t.Fatalf("text and a file: %s", r)
	}

	cwd, _ := os.Getwd()
	rel, err := filepath.Rel(cwd, filepath.Join(dir, "out"))
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to %s: %v", dir, err)
	}
	id = strings.TrimSpace(h.ok("run", "--output-dir", rel, "Write a report [[rel out]]").stdout)
	if got := h.task(id).OutputDirectory; got != filepath.Join(dir, "out") {
		t.Fatalf("output directory %q, want %q", got, filepath.Join(dir, "out"))
	}
}

// TestUnknownTemplateListsTheTemplates: a template that does not exist is
// refused naming the ones that do.
func TestUnknownTemplateListsTheTemplates(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("[[tmpl]]")
	tl, err := h.c.Templates(context.Background())
	if err != nil || len(tl.Templates) == 0 {
		t.Fatalf("templates %+v, %v", tl, err)
	}
	r := h.cli("run", "--template", "nosuch", "Do it [[tmpl]]")
	if r.code != 1 || !strings.Contains(r.stderr, `template "nosuch": no such template (the templates are: `+tl.Templates[0].ID) {
		t.Fatalf("run --template nosuch: %s", r)
	}
}

// TestUnsavedOutputsAreSaidAndDownloadable: when the output folder cannot
// take the files (here a file took its place while the task ran), the task
// still completes, but run --wait says which files were not saved, its
// summary says so, it exits 1, and `files --all` downloads them.
func TestUnsavedOutputsAreSaidAndDownloadable(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	hold := make(chan struct{})
	const m = "Write a report. [[unsaved]]"
	llm := h.scripted(m,
		llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": "the report"}),
		llmtest.Turn{Msg: llmtest.Text("I wrote the report.").Msg, Hold: hold},
		llmtest.Verdict(true, "Wrote the report."),
	)
	out := filepath.Join(t.TempDir(), "results")
	res := h.cliAsync("run", m, "--wait", "--output-dir", out)
	waitFor(t, "the held answer", func() bool { return len(llm.Requests(m)) >= 2 })
	if err := os.WriteFile(out, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	close(hold)
	var r result
	select {
	case r = <-res:
	case <-time.After(cliTimeout):
		t.Fatal("run --wait hangs")
	}
	if r.code != 1 || !strings.Contains(r.stdout, "report.txt (NOT SAVED: `hivecrew files ") || !strings.Contains(r.stdout, "could not be saved to "+out) ||
		!strings.Contains(r.stderr, "output files could not be saved to the output folder") {
		t.Fatalf("run --wait with an unusable output folder: %s", r)
	}
	id := regexp.MustCompile(`(?m)^Task: +(\S+)$`).FindStringSubmatch(r.stdout)[1]
	dl := t.TempDir()
	h.ok("files", id, "--all", "-o", dl)
	if b, err := os.ReadFile(filepath.Join(dl, "report.txt")); err != nil || string(b) != "the report" {
		t.Fatalf("downloaded report.txt: %q, %v", b, err)
	}
}

// TestRetriesAreNotSilent: a provider that rate-limits makes the agent
// wait; run --wait says so, with when it asks again, and so does the
// activity.
func TestRetriesAreNotSilent(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("Rate limited. [[429]]", llmtest.Status(429), llmtest.Text("Done."), llmtest.Verdict(true, "Done after a wait."))
	r := h.cli("run", "Rate limited. [[429]]", "--wait")
	if r.code != 0 || !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  LLM: the provider is rate limiting \(HTTP 429\): .*; asking again at \d\d:\d\d:\d\d, in .* \(attempt 2 of 5\)$`).MatchString(r.stderr) {
		t.Fatalf("run --wait through a 429: %s", r)
	}
}

// TestOpenWithoutABrowser: on a machine without a browser, open prints the
// sign-in link and says why, in one line, instead of the opener's errors.
func TestOpenWithoutABrowser(t *testing.T) {
	h := startHelper(t)
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	r := h.cli("open")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "http://127.0.0.1:") || !strings.Contains(r.stderr, "could not open a browser (xdg-open is not installed)") {
		t.Fatalf("open without xdg-open: %s", r)
	}
	script := "#!/bin/sh\necho \"xdg-open: no method available for opening '$1'\" >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r = h.cli("open")
	if r.code != 1 || !strings.Contains(r.stdout, "/login?token=") || !strings.Contains(r.stderr, "could not open a browser (no browser was found)") || strings.Contains(r.stderr, "no method available") {
		t.Fatalf("open with a failing xdg-open: %s", r)
	}
}

// TestCredentials: a credential's password goes in through stdin, is
// listed as stored but never shown, is not in the database, and goes with
// the credential; bad input is refused in words.
func TestCredentials(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	const pw = "s3cret-pa55word-for-the-test"
	var out, errOut strings.Builder
	if code := runWith([]string{"credentials", "add", "--name", "github", "--username", "octocat", "--password", "-", "--app", "Firefox", "--home", h.home},
		strings.NewReader(pw+"\n"), &out, &errOut); code != 0 {
		t.Fatalf("credentials add: exit %d: %s", code, errOut.String())
	}
	ls := h.ok("credentials", "ls").stdout
	if !regexp.MustCompile(`(?m)^github +octocat +stored +- +Firefox$`).MatchString(ls) {
		t.Fatalf("credentials ls:\n%s", ls)
	}
	if js := h.ok("credentials", "ls", "--json").stdout; strings.Contains(js, pw) || !strings.Contains(js, `"hasPassword": true`) {
		t.Fatalf("credentials ls --json:\n%s", js)
	}
	db, err := os.ReadFile(filepath.Join(h.home, "hivecrew.db"))
	if err != nil || bytes.Contains(db, []byte(pw)) {
		t.Fatalf("the database holds the password (%v)", err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"credentials", "add", "--name", "github", "--password", "x"}, "a credential named \"github\" exists already"},
		{[]string{"credentials", "add", "--name", "otp", "--totp-seed", "not base32!"}, "totpSeed: not a base32 secret"},
		{[]string{"credentials", "add", "--name", "empty"}, "needs a password or a totpSeed"},
		{[]string{"credentials", "rm", "nope"}, `credential "nope" not found`},
	} {
		if r := h.cli(bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("%q: %s", bad.args, r)
		}
	}
	h.ok("credentials", "rm", "github")
	if ls := h.ok("credentials", "ls").stdout; !strings.HasPrefix(ls, "No credentials yet") {
		t.Fatalf("after rm:\n%s", ls)
	}
}
