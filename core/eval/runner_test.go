package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// fakeHelper plays the helper's API for unit tests of the runner: each
// task ends as decide says, after one read while running.
type fakeHelper struct {
	decide func(in wire.CreateTask) (end wire.Task, check wire.CheckResult, outputs map[string]string)

	// mu guards the fields below.
	mu        sync.Mutex
	n         int
	tasks     map[string]wire.Task
	ends      map[string]wire.Task
	checks    map[string]wire.CheckResult
	outs      map[string]map[string]string
	created   []wire.CreateTask
	cancelled []string
}

var _ Helper = (*fakeHelper)(nil)

func (f *fakeHelper) CreateTask(_ context.Context, in wire.CreateTask, files ...string) (wire.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.TemplateID == "missing" {
		return wire.Task{}, errdefs.Invalidf("templateId %q: no such template", in.TemplateID)
	}
	f.n++
	id := fmt.Sprintf("t%d", f.n)
	end, check, outs := f.decide(in)
	end.ID = id
	if f.tasks == nil {
		f.tasks, f.ends, f.checks, f.outs = map[string]wire.Task{}, map[string]wire.Task{}, map[string]wire.CheckResult{}, map[string]map[string]string{}
	}
	f.tasks[id] = wire.Task{ID: id, Status: "running"}
	f.ends[id], f.checks[id], f.outs[id] = end, check, outs
	f.created = append(f.created, in)
	return f.tasks[id], nil
}

func (f *fakeHelper) Task(_ context.Context, id string) (wire.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tasks[id]
	f.tasks[id] = f.ends[id]
	return t, nil
}

func (f *fakeHelper) TaskAction(_ context.Context, id string, a wire.TaskAction) (wire.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	t := f.tasks[id]
	t.Status = "cancelled"
	f.tasks[id] = t
	return t, nil
}

func (f *fakeHelper) CheckResult(_ context.Context, id string) (wire.CheckResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks[id], nil
}

func (f *fakeHelper) Download(_ context.Context, id, name, kind string, w io.Writer) error {
	f.mu.Lock()
	s, ok := f.outs[id][name]
	f.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("no output %s", name)
	}
	_, err := io.Copy(w, strings.NewReader(s))
	return err
}

func ptr[T any](v T) *T { return &v }

// suiteOf is a suite of n tasks, each checked by a command and an output.
func suiteOf(t *testing.T, n int) Suite {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("t%d.json", i)] = fmt.Sprintf(`{"id": "task-%d", "instruction": "Task %d.",
			"evaluator": {"checks": [{"type": "command", "command": "true"}, {"type": "regex", "output": "out.txt", "pattern": "^ok$"}]}}`, i, i)
	}
	s, err := Load(writeSuite(t, files))
	if err != nil || len(s.Problems) > 0 {
		t.Fatal(err, s.Problems)
	}
	return s
}

// TestTwoModelsCompare: a model that solves 8 of 10 tasks and one that
// solves 3 (each run twice) compare as their rates say, with the Wilson
// intervals, costs per success and per-task cells the data give.
func TestTwoModelsCompare(t *testing.T) {
	s := suiteOf(t, 10)
	solves := map[string]int{"strong": 8, "weak": 3}
	cost := map[string]float64{"strong": 0.10, "weak": 0.02}
	h := &fakeHelper{decide: func(in wire.CreateTask) (wire.Task, wire.CheckResult, map[string]string) {
		var i int
		fmt.Sscanf(in.Description, "Task %d.", &i)
		end := wire.Task{Status: "completed", StepCount: ptr(5), TokenUsage: &wire.TokenUsage{Total: 1000}, CostUSD: ptr(cost[in.ModelID]), Duration: ptr(int64(60))}
		if i < solves[in.ModelID] {
			return end, wire.CheckResult{ExitCode: 0}, map[string]string{"out.txt": "ok"}
		}
		if i%2 == 0 {
			return end, wire.CheckResult{ExitCode: 1}, map[string]string{"out.txt": "ok"}
		}
		return end, wire.CheckResult{ExitCode: 0}, map[string]string{"out.txt": "no"}
	}}
	var progress []Progress
	rec, dir, err := Run(context.Background(), Config{Helper: h, Suite: s, Provider: "p", Models: []string{"strong", "weak"},
		Dir: t.TempDir(), Repeat: 2, Parallel: 3, Poll: 1, Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecord(dir)
	if err != nil || len(back.Results) != 40 {
		t.Fatalf("results.json: %d results, %v", len(back.Results), err)
	}
	sum := Summarize(back)
	want := map[string]struct {
		passes    int
		low, high float64
		perPass   float64
	}{
		"strong": {16, 0.5840, 0.9193, 0.10 * 20 / 16},
		"weak":   {6, 0.1455, 0.5190, 0.02 * 20 / 6},
	}
	for _, m := range sum.Models {
		w := want[m.Model]
		if m.Runs != 20 || m.Passes != w.passes || math.Abs(m.Low-w.low) > 1e-4 || math.Abs(m.High-w.high) > 1e-4 ||
			m.CostPerSuccess == nil || math.Abs(*m.CostPerSuccess-w.perPass) > 1e-9 || m.MeanSeconds != 60 || m.MeanSteps != 5 {
			t.Errorf("%s: %+v; want %d of 20, interval %.4f–%.4f, $%.4f per success", m.Model, m, w.passes, w.low, w.high, w.perPass)
		}
		if m.Failures[CheckerFailed] != 20-w.passes {
			t.Errorf("%s failures %v", m.Model, m.Failures)
		}
	}
	if sum.Models[0].Model != "strong" || len(sum.Tasks) != 10 {
		t.Fatalf("models %v, %d task rows", sum.Models, len(sum.Tasks))
	}
	for i, row := range sum.Tasks {
		for _, c := range row.Cells {
			wantPass := 0
			if i < solves[c.Model] {
				wantPass = 2
			}
			if c.Runs != 2 || c.Passes != wantPass {
				t.Errorf("%s × %s: %d/%d; want %d/2", row.Task, c.Model, c.Passes, c.Runs, wantPass)
			}
		}
	}
	if last := progress[len(progress)-1]; last.Done != 40 || last.Total != 40 || last.Passed != 22 {
		t.Errorf("last progress %+v", last)
	}
	if in := h.created[0]; in.ToolPolicy["ask_text_question"] != "deny" || in.ToolPolicy["run_shell"] != "allow" || in.CheckCommand != "true" || in.NetworkMode != "offline" {
		t.Errorf("task sent as %+v", in)
	}
	var html bytes.Buffer
	if err := WriteReport(&html, rec); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"16/20 · 80%", "6/20 · 30%", "58% – 92%", "15% – 52%", "$0.1250", "$0.0667"} {
		if !strings.Contains(html.String(), s) {
			t.Errorf("the report lacks %q", s)
		}
	}
}

// TestFailureCategories: how a task ends decides its category.
func TestFailureCategories(t *testing.T) {
	s := suiteOf(t, 1)
	ends := map[string]wire.Task{
		"limits":  {Status: "timedOut", ErrorMessage: ptr("timed out after 10 minutes")},
		"steps":   {Status: "maxIterations"},
		"llm":     {Status: "paused", StatusReason: "LLM error: 500 Internal Server Error"},
		"llmdead": {Status: "failed", ErrorMessage: ptr("LLM error: 401 Incorrect API key")},
		"vm":      {Status: "failed", ErrorMessage: ptr("The VM failed: the sandbox exited")},
		"setup":   {Status: "failed", ErrorMessage: ptr("Setup command 1 of 1 failed: exit status 2\n$ cat fixture\nno such file")},
		"budget":  {Status: "paused", StatusReason: "cost budget reached: $1.00 of $1.00"},
	}
	want := map[string]string{"limits": Timeout, "steps": MaxIterations, "llm": ProviderError, "llmdead": ProviderError,
		"vm": VMError, "setup": SetupError, "budget": Cancelled, "missing": SetupError}
	h := &fakeHelper{decide: func(in wire.CreateTask) (wire.Task, wire.CheckResult, map[string]string) {
		return ends[in.ModelID], wire.CheckResult{ExitCode: 1}, nil
	}}
	var models []string
	for m := range ends {
		models = append(models, m)
	}
	s.Tasks[0].Template = ""
	rec, _, err := Run(context.Background(), Config{Helper: h, Suite: s, Provider: "p", Models: models, Dir: t.TempDir(), Poll: 1, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.Results {
		if r.Category != want[r.Model] || r.Success {
			t.Errorf("%s: %s (%s); want %s", r.Model, r.Category, r.Detail, want[r.Model])
		}
	}
	if len(h.cancelled) != 2 {
		t.Errorf("cancelled %v; want the tasks held by an LLM error and a budget", h.cancelled)
	}
	s.Tasks[0].Template = "missing"
	rec, _, err = Run(context.Background(), Config{Helper: h, Suite: s, Provider: "p", Models: []string{"x"}, Dir: t.TempDir(), Poll: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Results[0]; r.Category != SetupError || !strings.Contains(r.Detail, `templateId "missing": no such template`) {
		t.Errorf("missing template: %+v", r)
	}
}

// TestOnlyUnknown: --only with an id the suite lacks is an error before
// anything runs.
func TestOnlyUnknown(t *testing.T) {
	h := &fakeHelper{}
	_, _, err := Run(context.Background(), Config{Helper: h, Suite: suiteOf(t, 2), Provider: "p", Models: []string{"m"}, Dir: t.TempDir(), Only: []string{"task-1", "nope"}})
	if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "no task nope") || len(h.created) != 0 {
		t.Fatalf("err = %v, %d created", err, len(h.created))
	}
}

// TestWilson: known intervals.
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		x, n      int
		low, high float64
	}{{0, 10, 0, 0.2775}, {10, 10, 0.7225, 1}, {5, 10, 0.2366, 0.7634}, {0, 0, 0, 0}} {
		l, h := Wilson(c.x, c.n)
		if math.Abs(l-c.low) > 1e-4 || math.Abs(h-c.high) > 1e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f–%.4f, want %.4f–%.4f", c.x, c.n, l, h, c.low, c.high)
		}
	}
}

// TestInterrupted: a run interrupted while tasks run cancels them in the
// helper, keeps the results that came in and ends its record.
func TestInterrupted(t *testing.T) {
	s := suiteOf(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	h := &fakeHelper{decide: func(in wire.CreateTask) (wire.Task, wire.CheckResult, map[string]string) {
		if in.Description == "Task 0." {
			return wire.Task{Status: "completed"}, wire.CheckResult{}, map[string]string{"out.txt": "ok"}
		}
		return wire.Task{Status: "running"}, wire.CheckResult{}, nil // never ends
	}}
	var once sync.Once
	rec, dir, err := Run(ctx, Config{Helper: h, Suite: s, Provider: "p", Models: []string{"m"}, Dir: t.TempDir(), Poll: 1, Parallel: 4,
		Progress: func(p Progress) {
			if p.Done == 1 {
				once.Do(cancel)
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want the interruption", err)
	}
	back, rerr := ReadRecord(dir)
	if rerr != nil || len(back.Results) != 1 || back.Results[0].Task != "task-0" || !back.Results[0].Success || back.EndedAt.IsZero() || len(rec.Results) != 1 {
		t.Fatalf("record %+v, %v; want task-0's result alone, ended", back, rerr)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.cancelled) != 3 {
		t.Fatalf("cancelled %v; want the 3 running tasks", h.cancelled)
	}
}

// TestSuiteTasksCounted: a run of some of a suite's tasks (--only) records
// how many the suite has, and its brief says both numbers; an older record
// without the count falls back to the tasks run and its problems.
func TestSuiteTasksCounted(t *testing.T) {
	h := &fakeHelper{decide: func(wire.CreateTask) (wire.Task, wire.CheckResult, map[string]string) {
		return wire.Task{Status: "completed"}, wire.CheckResult{}, map[string]string{"out.txt": "ok\n"}
	}}
	rec, _, err := Run(context.Background(), Config{Helper: h, Suite: suiteOf(t, 4), Provider: "p", Models: []string{"m"}, Dir: t.TempDir(), Poll: 1, Only: []string{"task-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if b := brief(rec, time.Now()); len(rec.Tasks) != 1 || rec.SuiteTasks != 4 || b.Tasks != 1 || b.SuiteTasks != 4 {
		t.Fatalf("record %v of %d, brief %d of %d; want 1 of 4", rec.Tasks, rec.SuiteTasks, b.Tasks, b.SuiteTasks)
	}
	old := Record{Tasks: []string{"a", "b"}, Problems: []Problem{{File: "c.json"}}}
	if b := brief(old, time.Now()); b.SuiteTasks != 3 {
		t.Fatalf("an older record's suite: %d tasks, want 3", b.SuiteTasks)
	}
}
