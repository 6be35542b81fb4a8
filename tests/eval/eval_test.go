package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/eval"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// bin holds hivecrew, hivecrew-helper and hivecrew-guestagent.
var bin string

func TestMain(m *testing.M) { helperproc.Main(m, &bin) }

// starter is the starter suite.
const starter = "suites/linux-desktop"

// subset are the starter tasks `make test` runs (make eval-selftest runs
// them all): a guest check, a JSON output, a guest check with an output,
// one solved through the editor's window, one through a GTK preferences
// dialog and a form filled in and sent in Chromium.
var subset = []string{"rename-draft", "csv-to-json", "run-script", "editor-append-line", "gtk-line-numbers", "form-register"}

// Models of the scripted provider: "oracle" replays each task's oracle,
// "null" stops at once (it says it is done, and claims success).
const (
	oracle = "oracle"
	null   = "null"
)

// scripted is the scripted provider for a suite: a request of model
// oracle gets its task's oracle (found by the task's instruction in the
// request), then "done"; anything else gets the default, which stops.
func scripted(t *testing.T, s eval.Suite) *llmtest.Server {
	llm := llmtest.New(t)
	markers := map[string]string{}
	for _, task := range s.Tasks {
		b, _ := json.Marshal(task.Instruction)
		markers[task.ID] = strings.Trim(string(b), `"`)
		var turns []llmtest.Turn
		for _, c := range task.Oracle {
			var args map[string]any
			if err := json.Unmarshal(c.Args, &args); err != nil {
				t.Fatal(err)
			}
			turns = append(turns, llmtest.Tool(c.Tool, args))
		}
		llm.Script(task.ID, append(turns, llmtest.Done("Solved "+task.ID)...)...)
	}
	llm.Match = func(body string) string {
		if !strings.Contains(body, `"model":"`+oracle+`"`) {
			return ""
		}
		for id, m := range markers {
			if strings.Contains(body, m) {
				return id
			}
		}
		return ""
	}
	return llm
}

// start starts a helper with real sandboxes whose provider is llm.
func start(t *testing.T, llm *llmtest.Server, vms int) (*client.Client, string) {
	home := daemontest.NewHome(t)
	p := helperproc.Start(t, bin, home)
	p.AddProvider(t, "Scripted", llm.URL, "sk-test")
	p.Settings(t, map[string]any{"maxConcurrentVMs": vms, "warmPoolSize": 0, "vmMemoryMB": 1024, "vmCpuCount": 1, "limitGraceMinutes": 0})
	p.DropWarmVMs(t)
	p.NoMountsAtEnd(t)
	return p.Unix, home
}

// TestStarterSuite runs starter tasks (all of them with
// HIVECREW_EVAL_ALL=1: make eval-selftest; those of HIVECREW_EVAL_ONLY,
// comma-separated, when a task is being written) with their oracle and with a
// null run in real sandboxes: every oracle passes its checkers and every
// null run fails them. It compares the two "models" in the report data
// and renders the report in headless Chromium.
func TestStarterSuite(t *testing.T) {
	s, err := eval.Load(starter)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) > 0 {
		t.Fatalf("the starter suite has broken tasks: %+v", s.Problems)
	}
	only := subset
	if os.Getenv("HIVECREW_EVAL_ALL") == "1" {
		only = nil
	} else if ids := os.Getenv("HIVECREW_EVAL_ONLY"); ids != "" {
		only = strings.Split(ids, ",")
	}
	llm := scripted(t, s)
	c, home := start(t, llm, 2)
	rec, dir, err := eval.Run(context.Background(), eval.Config{
		Helper: c, Suite: s, Provider: "Scripted", Models: []string{oracle, null}, Dir: filepath.Join(home, "Evals"),
		Parallel: 2, Only: only, WebBase: "http://127.0.0.1:5482",
		Progress: func(p eval.Progress) {
			if r := p.Last; r != nil {
				t.Logf("[%d/%d] %s (%s): %s %s", p.Done, p.Total, r.Task, r.Model, r.Category, r.Detail)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := len(s.Tasks)
	if only != nil {
		want = len(only)
	}
	if len(rec.Results) != 2*want {
		t.Fatalf("%d results, want %d", len(rec.Results), 2*want)
	}
	for _, r := range rec.Results {
		switch {
		case r.Model == oracle && !r.Success:
			t.Errorf("oracle of %s failed: %s: %s (task %s, status %s); its activity:%s", r.Task, r.Category, r.Detail, r.HelperTask, r.Status, activity(c, r.HelperTask))
		case r.Model == null && (r.Success || r.Category != eval.CheckerFailed):
			t.Errorf("null run of %s: success %v, %s: %s; want the checker to fail it", r.Task, r.Success, r.Category, r.Detail)
		case r.HelperTask == "" || r.Status != "completed":
			t.Errorf("%s (%s) ran as task %q, status %s; want a completed task", r.Task, r.Model, r.HelperTask, r.Status)
		}
	}
	// The file on disk is the record.
	back, err := eval.ReadRecord(dir)
	if err != nil || len(back.Results) != len(rec.Results) || back.EndedAt.IsZero() {
		t.Fatalf("results.json: %d results, ended %v, %v", len(back.Results), back.EndedAt, err)
	}
	sum := eval.Summarize(back)
	if len(sum.Models) != 2 || sum.Models[0].Model != oracle || sum.Models[0].Rate != 1 || sum.Models[1].Rate != 0 ||
		want >= 5 && sum.Models[0].Low <= sum.Models[1].High { // 5 of 5 against 0 of 5: 57–100% and 0–43%
		t.Fatalf("comparison: %+v; want oracle at 100%% above null at 0%%, their intervals apart", sum.Models)
	}
	renderReport(t, back, "starter")
}

// activity is a task's activity, a line per event.
func activity(c *client.Client, id string) string {
	act, err := c.Activity(context.Background(), id, 0)
	if err != nil {
		return " " + err.Error()
	}
	var b strings.Builder
	for _, e := range act.Events {
		fmt.Fprintf(&b, "\n  %s: %s %s", e.Type, e.Data.Summary, e.Data.Details)
	}
	return b.String()
}

// TestBrokenSuite: a suite with a malformed task, a task on a template
// that does not exist and a checker that crashes gets a clear error for
// each, and its good task still runs and passes.
func TestBrokenSuite(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good.json", `{"id": "good", "instruction": "Write ok into the outbox as ok.txt.",
		"evaluator": {"checks": [{"type": "regex", "output": "ok.txt", "pattern": "^ok\\s*$"}]},
		"oracle": [{"tool": "run_shell", "args": {"command": "echo ok > \"$HIVECREW_SHARED/outbox/ok.txt\""}}]}`)
	write("malformed.json", `{"id": "malformed", "instruction": "x", "evaluator": {"checks": [{"type": "sniff"}]}, "oracle": []}`)
	write("truncated.json", `{"id": "truncated", "instruction": `)
	write("no-template.json", `{"id": "no-template", "instruction": "Do nothing at all.", "template": "no-such-template",
		"evaluator": {"checks": [{"type": "command", "command": "true"}]}, "oracle": []}`)
	write("crash.json", `{"id": "crash", "instruction": "Do nothing, then stop.",
		"evaluator": {"checks": [{"type": "command", "command": "kill -SEGV $$"}]}, "oracle": []}`)
	s, err := eval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	problems := map[string]string{}
	for _, p := range s.Problems {
		problems[p.File] = p.Err
	}
	if !strings.Contains(problems["malformed.json"], `unknown check type "sniff"`) || !strings.Contains(problems["truncated.json"], "not a task") || len(problems) != 2 {
		t.Fatalf("problems: %q; want the malformed and the truncated task, each said why", problems)
	}
	llm := scripted(t, s)
	c, home := start(t, llm, 2)
	rec, _, err := eval.Run(context.Background(), eval.Config{
		Helper: c, Suite: s, Provider: "Scripted", Models: []string{oracle}, Dir: filepath.Join(home, "Evals"), Parallel: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]eval.Result{}
	for _, r := range rec.Results {
		got[r.Task] = r
	}
	if r := got["good"]; !r.Success {
		t.Errorf("the good task: %+v; want it to pass", r)
	}
	if r := got["no-template"]; r.Category != eval.SetupError || !strings.Contains(r.Detail, `templateId "no-such-template": no such template`) {
		t.Errorf("the task on a missing template: %s: %s; want a setup error that names the template", r.Category, r.Detail)
	}
	if r := got["crash"]; r.Category != eval.CheckerError || !strings.Contains(r.Detail, "crashed (exit 139)") {
		t.Errorf("the crashing checker: %s: %s; want a checker error that says it crashed", r.Category, r.Detail)
	}
	if len(rec.Results) != 3 || len(rec.Problems) != 2 {
		t.Errorf("%d results and %d problems; want 3 and 2", len(rec.Results), len(rec.Problems))
	}
	renderReport(t, rec, "broken")
}

// renderReport writes a run's report into tests/out/eval, renders it in
// headless Chromium, checks what it shows and keeps a screenshot.
func renderReport(t *testing.T, rec eval.Record, name string) {
	out, err := filepath.Abs(filepath.Join("..", "out", "eval"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(out, name+"-report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := eval.WriteReport(f, rec); err != nil {
		t.Fatal(err)
	}
	f.Close()
	chromium := cmp.Or(os.Getenv("HIVECREW_CHROMIUM"), "/usr/bin/chromium")
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--no-sandbox", "--window-size=1280,900"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dom, err := exec.CommandContext(ctx, chromium, append(args, "--dump-dom", "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	for _, m := range rec.Models {
		if !strings.Contains(string(dom), "<td>"+m+"</td>") {
			t.Errorf("the rendered report has no row of model %s", m)
		}
	}
	for _, r := range rec.Results {
		if r.HelperTask != "" && !strings.Contains(string(dom), "/tasks/"+r.HelperTask+"/replay") {
			t.Errorf("the rendered report has no link to the replay of %s (%s)", r.Task, r.Model)
		}
	}
	shot := filepath.Join(out, name+"-report.png")
	os.Remove(shot)
	if b, err := exec.CommandContext(ctx, chromium, append(args, "--screenshot="+shot, "file://"+page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("report %s, screenshot %s", page, shot)
}
