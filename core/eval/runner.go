package eval

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Helper is what the runner needs of the helper's API (core/client).
type Helper interface {
	CreateTask(ctx context.Context, in wire.CreateTask, files ...string) (wire.Task, error)
	Task(ctx context.Context, id string) (wire.Task, error)
	TaskAction(ctx context.Context, id string, a wire.TaskAction) (wire.Task, error)
	CheckResult(ctx context.Context, id string) (wire.CheckResult, error)
	Download(ctx context.Context, id, name, kind string, w io.Writer) error
}

// Config is a run of a suite.
type Config struct {
	// Helper, Suite, Provider, Models and Dir are required.
	Helper   Helper
	Suite    Suite
	Provider string
	Models   []string
	// Dir is where the run's folder is made (<data>/Evals).
	Dir string
	// Repeat runs each task this many times per model (default 1);
	// Parallel runs this many at once (default 1).
	Repeat, Parallel int
	// Only, if set, are the ids of the tasks to run.
	Only []string
	// Template, if set, is the template of the tasks that name none.
	Template string
	// WebBase is the web UI's address, for links to replays.
	WebBase string
	// Progress, if set, is told after each change.
	Progress func(Progress)
	// Poll is how often a task is read while it runs (default 500 ms).
	Poll time.Duration
	// Heartbeat is how often results.json is touched while the run goes
	// on (default Heartbeat).
	Heartbeat time.Duration
}

// Progress is where a run is.
type Progress struct {
	Total, Done, Passed int
	// Running are "task (model)" of the runs under way.
	Running []string
	// Last is the result that just came in, if any.
	Last *Result
}

// job is one task run by one model once.
type job struct {
	task    Task
	model   string
	attempt int
}

// Run runs the suite's tasks on every model and returns the record; it
// is written to <Dir>/<run id>/results.json as results come in.
func Run(ctx context.Context, cfg Config) (Record, string, error) {
	if cfg.Helper == nil || cfg.Provider == "" || len(cfg.Models) == 0 || cfg.Dir == "" {
		return Record{}, "", errdefs.Invalidf("eval run: a helper, a provider, a model and a folder are required")
	}
	cfg.Repeat, cfg.Parallel, cfg.Poll = max(cfg.Repeat, 1), max(cfg.Parallel, 1), cmp.Or(cfg.Poll, 500*time.Millisecond)
	tasks := cfg.Suite.Tasks
	problems := slices.Clone(cfg.Suite.Problems)
	if len(cfg.Only) > 0 {
		known := map[string]bool{}
		for _, t := range cfg.Suite.Tasks {
			known[t.ID] = true
		}
		for _, p := range cfg.Suite.Problems {
			known[p.ID] = true
		}
		var unknown []string
		for _, id := range cfg.Only {
			if !known[id] {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			return Record{}, "", errdefs.Invalidf("--only: no task %s in suite %s", strings.Join(unknown, ", "), cfg.Suite.Name)
		}
		tasks = slices.DeleteFunc(slices.Clone(tasks), func(t Task) bool { return !slices.Contains(cfg.Only, t.ID) })
		problems = slices.DeleteFunc(problems, func(p Problem) bool { return !slices.Contains(cfg.Only, p.ID) })
	}
	id := time.Now().UTC().Format("20060102-150405") + "-" + uuid.NewString()[:4]
	dir := filepath.Join(cfg.Dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Record{}, "", fmt.Errorf("eval run: %w", err)
	}
	rec := Record{ID: id, Suite: cfg.Suite.Name, SuiteDir: cfg.Suite.Dir, Provider: cfg.Provider, Models: cfg.Models,
		Repeat: cfg.Repeat, WebBase: cfg.WebBase, StartedAt: time.Now().UTC(), Problems: problems, Results: []Result{},
		SuiteTasks: len(cfg.Suite.Tasks) + len(cfg.Suite.Problems)}
	var jobs []job
	for _, t := range tasks {
		rec.Tasks = append(rec.Tasks, t.ID)
	}
	for a := 1; a <= cfg.Repeat; a++ {
		for _, t := range tasks {
			for _, m := range cfg.Models {
				jobs = append(jobs, job{task: t, model: m, attempt: a})
			}
		}
	}
	if err := WriteRecord(dir, rec); err != nil {
		return rec, dir, err
	}
	tmp, err := os.MkdirTemp(dir, ".inputs-")
	if err != nil {
		return rec, dir, fmt.Errorf("eval run: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The heartbeat tells readers of the folder (the web UI's Evals page)
	// that the run is alive while a task takes longer than StaleAfter.
	beat, stopBeat := context.WithCancel(ctx)
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		heartbeat(beat, filepath.Join(dir, resultsFile), cmp.Or(cfg.Heartbeat, Heartbeat))
	}()
	defer func() { stopBeat(); <-beaten }()

	// mu guards rec and progress.
	var mu sync.Mutex
	progress := Progress{Total: len(jobs)}
	tell := func() {
		if cfg.Progress != nil {
			p := progress
			p.Running = slices.Clone(p.Running)
			cfg.Progress(p)
		}
	}
	var writeErr error
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for _, j := range jobs {
		g.Go(func() error {
			name := j.task.ID + " (" + j.model + ")"
			mu.Lock()
			progress.Running = append(progress.Running, name)
			tell()
			mu.Unlock()
			res := runOne(gctx, cfg, j, tmp)
			mu.Lock()
			defer mu.Unlock()
			progress.Running = slices.DeleteFunc(progress.Running, func(s string) bool { return s == name })
			if gctx.Err() != nil && res.Category == Cancelled {
				return nil // an interrupted run records what finished
			}
			rec.Results = append(rec.Results, res)
			progress.Done++
			if res.Success {
				progress.Passed++
			}
			progress.Last = &res
			tell()
			progress.Last = nil
			if err := WriteRecord(dir, rec); err != nil && writeErr == nil {
				writeErr = err
			}
			return nil
		})
	}
	g.Wait()
	rec.EndedAt = time.Now().UTC()
	return rec, dir, errors.Join(writeErr, WriteRecord(dir, rec), ctx.Err())
}

// heartbeat touches file every period until ctx ends.
func heartbeat(ctx context.Context, file string, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			os.Chtimes(file, now, now) // a missed beat only makes the run look stale sooner
		}
	}
}

// runOne runs a job through the helper and checks what it left.
func runOne(ctx context.Context, cfg Config, j job, tmp string) Result {
	res := Result{Task: j.task.ID, Model: j.model, Attempt: j.attempt}
	fail := func(cat, detail string) Result {
		res.Category, res.Detail = cat, detail
		return res
	}
	dir := cfg.Suite.Dir
	setup, err := j.task.SetupCommand(dir)
	if err != nil {
		return fail(SetupError, err.Error())
	}
	inputs, err := j.task.Inputs(dir, tmp)
	if err != nil {
		return fail(SetupError, err.Error())
	}
	in := wire.CreateTask{
		Description: j.task.Instruction, ProviderName: cfg.Provider, ModelID: j.model, TemplateID: cmp.Or(j.task.Template, cfg.Template),
		TimeoutMinutes: j.task.Limits.TimeoutMinutes, MaxIterations: j.task.Limits.MaxIterations,
		NetworkMode: "offline", ToolPolicy: j.task.Policy(), SetupCommand: setup, CheckCommand: j.task.CheckCommand(),
	}
	t, err := cfg.Helper.CreateTask(ctx, in, inputs...)
	if err != nil {
		if ctx.Err() != nil {
			return fail(Cancelled, "the run was interrupted")
		}
		return fail(SetupError, "the helper refused the task: "+err.Error())
	}
	res.HelperTask = t.ID
	t, cat, detail := wait(ctx, cfg, t, j.task.Limits.TimeoutMinutes)
	res.Status = t.Status
	if t.StepCount != nil {
		res.Steps = *t.StepCount
	}
	if t.TokenUsage != nil {
		res.Tokens = int64(t.TokenUsage.Total)
	}
	if t.CostUSD != nil {
		res.CostUSD = *t.CostUSD
	}
	if t.Duration != nil {
		res.Seconds = float64(*t.Duration)
	}
	if cat != "" {
		return fail(cat, detail)
	}
	res.Checks = check(ctx, cfg, j.task, t.ID)
	res.Success = true
	for _, v := range res.Checks {
		if !v.Passed {
			res.Success = false
			res.Category, res.Detail = CheckerFailed, v.Detail
			if v.Crashed {
				res.Category = CheckerError
			}
			break
		}
	}
	if res.Success {
		res.Category = Passed
		return res
	}
	// The state was not right: a limit the agent hit says why first.
	switch t.Status {
	case "timedOut":
		res.Category = Timeout
	case "maxIterations":
		res.Category = MaxIterations
	}
	return res
}

// wait follows a task to its end. A category is returned when the run
// cannot be checked: the provider or the VM failed, the setup failed, or
// the run was interrupted.
func wait(ctx context.Context, cfg Config, t wire.Task, minutes int) (wire.Task, string, string) {
	// The helper ends a task at its limit; this deadline only guards
	// against a task that never ends (held at a limit, say).
	deadline := time.Now().Add(time.Duration(cmp.Or(minutes, 30))*time.Minute + 15*time.Minute)
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		switch t.Status {
		case "completed", "failed", "cancelled", "timedOut", "maxIterations", "planFailed", "writebackReview":
			return t, endCategory(t), reason(t)
		case "paused":
			if strings.HasPrefix(t.StatusReason, "LLM error") {
				return cancel(cfg, t, ProviderError)
			}
			if strings.Contains(t.StatusReason, "budget reached") || strings.HasPrefix(t.StatusReason, "the agent asks for help") {
				return cancel(cfg, t, Cancelled)
			}
		}
		if time.Now().After(deadline) {
			return cancel(cfg, t, Timeout)
		}
		select {
		case <-ctx.Done():
			t, _, _ = cancel(cfg, t, Cancelled)
			return t, Cancelled, "the run was interrupted"
		case <-tick.C:
		}
		nt, err := cfg.Helper.Task(ctx, t.ID)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return t, VMError, "could not read the task: " + err.Error()
		}
		t = nt
	}
}

// cancel cancels a task the run gives up on, and says why.
func cancel(cfg Config, t wire.Task, cat string) (wire.Task, string, string) {
	why := reason(t)
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	if nt, err := cfg.Helper.TaskAction(ctx, t.ID, wire.TaskAction{Action: "cancel"}); err == nil {
		t = nt
	}
	if cat == Cancelled {
		why = "held with no one to answer, and cancelled: " + why
	}
	return t, cat, why
}

// endCategory is the category of a task that ended without a usable
// state: "" when its checkers decide.
func endCategory(t wire.Task) string {
	r := reason(t)
	switch {
	case t.Status == "cancelled":
		return Cancelled
	case t.Status != "failed":
		return ""
	case strings.HasPrefix(r, "LLM error"):
		return ProviderError
	case strings.HasPrefix(r, "Setup command "), strings.HasPrefix(r, "Provisioning failed"),
		strings.HasPrefix(r, "Could not provision the VM"):
		// A task's setupCommand is the last of its provisioning's setup
		// commands.
		return SetupError
	case strings.HasPrefix(r, "The VM failed"), strings.HasPrefix(r, "No VM for this task"),
		strings.HasPrefix(r, "Could not give the input files"):
		return VMError
	}
	return ""
}

// reason is what a task says about how it ended.
func reason(t wire.Task) string {
	if t.ErrorMessage != nil && *t.ErrorMessage != "" {
		return *t.ErrorMessage
	}
	if t.ResultSummary != nil && *t.ResultSummary != "" {
		return *t.ResultSummary
	}
	return t.StatusReason
}

// check runs a task's checkers: the command's result from the helper,
// the others against its outputs.
func check(ctx context.Context, cfg Config, task Task, id string) []Verdict {
	var out []Verdict
	for _, c := range task.Evaluator.Checks {
		if c.Type != "command" {
			out = append(out, HostCheck(cfg.Suite.Dir, c, func(name string) ([]byte, error) {
				return download(ctx, cfg.Helper, id, name)
			}))
			continue
		}
		cr, err := cfg.Helper.CheckResult(ctx, id)
		if err != nil {
			out = append(out, Verdict{Type: "command", Detail: "the check command did not run: " + err.Error(), Crashed: true})
			continue
		}
		out = append(out, CommandVerdict(cr))
	}
	return out
}

// CommandVerdict judges a check command's result: exit 0 passes, 1 to
// 125 fails, anything else (a signal, a timeout, not run) is a checker
// that crashed.
func CommandVerdict(cr wire.CheckResult) Verdict {
	v := Verdict{Type: "command"}
	last := files.LastLine(cr.Stdout+"\n"+cr.Stderr, 300)
	switch {
	case cr.Error != "":
		v.Detail, v.Crashed = "the check command did not run: "+cr.Error, true
	case cr.TimedOut:
		v.Detail, v.Crashed = "the check command timed out", true
	case cr.ExitCode == 0:
		v.Passed = true
	case cr.ExitCode > 0 && cr.ExitCode < 126:
		v.Detail = fmt.Sprintf("the check command exited %d", cr.ExitCode)
	default:
		v.Detail, v.Crashed = fmt.Sprintf("the check command crashed (exit %d)", cr.ExitCode), true
	}
	if !v.Passed && last != "" {
		v.Detail += ": " + last
	}
	return v
}

// download reads a task's output, bounded.
func download(ctx context.Context, h Helper, id, name string) ([]byte, error) {
	var buf bytes.Buffer
	err := h.Download(ctx, id, name, "output", &limited{w: &buf, n: maxFile + 1})
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errors.New("not in the task's outputs")
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// limited writes at most n bytes and then fails.
type limited struct {
	w io.Writer
	n int64
}

func (l *limited) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, fmt.Errorf("over %d bytes", maxFile)
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}
