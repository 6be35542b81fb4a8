package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/eval"
)

var _ eval.Helper = (*client.Client)(nil)

// cmdEval: hivecrew eval run|report
func cmdEval(e *env, args []string) error {
	return runTable(e, "eval", []command{
		{"run", "SUITE --provider P --model M [--model M2]... [--repeat N] [--parallel K] [--only IDS] [--template T]", "run a suite's tasks on one or more models", evalRun},
		{"report", "[RUN] [-o FILE.html]", "write the HTML report of a run (default: the latest)", evalReport},
	}, args)
}

// evalsDir is where runs are kept: <data>/Evals.
func (e *env) evalsDir() (string, error) {
	p, err := e.resolvePaths()
	if err != nil {
		return "", err
	}
	return p.Evals(), nil
}

func evalRun(e *env, args []string) error {
	fs := e.flags()
	provider := fs.String("provider", "", "the LLM `PROVIDER` (name or id) every task runs with")
	var models, only listFlag
	fs.Var(&models, "model", "a `MODEL` to evaluate (repeat to compare several)")
	fs.Var(&only, "only", "run only these task `IDS` (comma-separated; repeatable)")
	repeat := fs.Int("repeat", 1, "run each task `N` times per model")
	parallel := fs.Int("parallel", 1, "run `K` tasks at once (the helper's maxConcurrentVMs still applies)")
	template := fs.String("template", "", "the `TEMPLATE` of the tasks that name none (default: the helper's default template)")
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	switch {
	case *provider == "":
		return e.bad(fs, "eval run needs --provider")
	case len(models) == 0:
		return e.bad(fs, "eval run needs at least one --model")
	case *repeat < 1 || *repeat > 100:
		return e.bad(fs, "--repeat takes 1 to 100, not %d", *repeat)
	case *parallel < 1 || *parallel > 32:
		return e.bad(fs, "--parallel takes 1 to 32, not %d", *parallel)
	}
	var ids []string
	for _, o := range only {
		for _, id := range strings.Split(o, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
	}
	suite, err := eval.Load(pos[0])
	if err != nil {
		return err
	}
	for _, p := range suite.Problems {
		fmt.Fprintf(e.stderr, "hivecrew: suite %s: task %s cannot run: %s\n", suite.Name, p.File, p.Err)
	}
	dir, err := e.evalsDir()
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	web := ""
	if sc, err := c.SystemConfig(e.ctx); err == nil {
		web = sc.WebURL
	}
	if st, err := c.Settings(e.ctx); err == nil && st.LimitGraceMinutes > 0 {
		fmt.Fprintf(e.stderr, "hivecrew: note: a task at its step or time limit is held %g minutes (Settings: limitGraceMinutes) before it ends and is checked; 0 ends it at once\n", st.LimitGraceMinutes)
	}
	width, tty := terminalWidth(e.stderr)
	// mu keeps progress lines whole.
	var mu sync.Mutex
	rec, runDir, err := eval.Run(e.ctx, eval.Config{
		Helper: c, Suite: suite, Provider: *provider, Models: models, Dir: dir,
		Repeat: *repeat, Parallel: *parallel, Only: ids, Template: *template, WebBase: web,
		Progress: func(p eval.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if p.Last != nil {
				r := p.Last
				if tty {
					fmt.Fprint(e.stderr, "\r\x1b[K")
				}
				line := fmt.Sprintf("%s %s (%s): %s", mark(r.Success), r.Task, r.Model, r.Category)
				if !r.Success && r.Detail != "" {
					line += ": " + oneLine(r.Detail)
				}
				fmt.Fprintln(e.stderr, clip(line, 300))
			}
			if tty {
				line := fmt.Sprintf("[%d/%d] %d passed · running: %s", p.Done, p.Total, p.Passed, strings.Join(p.Running, ", "))
				fmt.Fprintf(e.stderr, "\r%s\x1b[K", clip(line, width-1))
			}
		},
	})
	if tty {
		fmt.Fprint(e.stderr, "\r\x1b[K")
	}
	if runDir == "" {
		return err
	}
	if e.json {
		if perr := e.printJSON(rec); perr != nil {
			return perr
		}
		return err
	}
	for _, m := range eval.Summarize(rec).Models {
		e.out("%s: %d/%d passed (%.0f%%, 95%% interval %.0f–%.0f%%), cost $%.4f", m.Model, m.Passes, m.Runs, 100*m.Rate, 100*m.Low, 100*m.High, m.CostUSD)
	}
	e.out("Results: %s\nReport: hivecrew eval report %s -o report.html", filepath.Join(runDir, "results.json"), rec.ID)
	if web != "" {
		e.out("In the web UI: %s/evals/%s", web, rec.ID)
	}
	return err
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

func evalReport(e *env, args []string) error {
	fs := e.flags()
	out := fs.String("o", "", "write the report to `FILE` (default: report.html in the run's folder)")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return e.bad(fs, "eval report takes at most one run, got %d", len(pos))
	}
	dir, err := e.evalsDir()
	if err != nil {
		return err
	}
	var run string
	switch {
	case len(pos) == 0:
		if run, err = eval.LatestRun(dir); err != nil {
			return err
		}
	case strings.ContainsRune(pos[0], os.PathSeparator) || strings.HasSuffix(pos[0], ".json"):
		run = pos[0]
	default:
		run = filepath.Join(dir, pos[0])
	}
	rec, err := eval.ReadRecord(run)
	if err != nil {
		return err
	}
	dst := *out
	if dst == "" {
		dst = filepath.Join(dir, rec.ID, "report.html")
	}
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := eval.WriteReport(f, rec); err != nil {
		f.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	e.out("Wrote %s", dst)
	return nil
}
