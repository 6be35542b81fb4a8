package api

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/eval"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Evaluation runs (extension): the runs of `hivecrew eval run` in
// <data>/Evals, for the web UI's Evals page. The CLI writes them; the
// API reads them, renders their reports and removes them.

// maxEvalRuns caps GET /evals: the newest runs, and the list says when
// there are more.
const maxEvalRuns = 200

// ReportPolicy is the Content-Security-Policy of an eval report (GET
// /evals/:id/report). A report holds text a guest chose: a checker's
// last line of output, the agent's answer, a task's name in a suite.
// html/template escapes all of it (the first wall); this policy is the
// second: no script, no fetch, no form, no frame, no plugin and no other
// origin's anything, only the report's own inline style, and the
// document is sandboxed. allow-same-origin lets the report's links to
// replays be followed as this site (a sandboxed document's own origin
// is opaque, so they would otherwise be cross-site requests, which the
// helper refuses); with no script allowed it grants nothing else.
const ReportPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; " +
	"frame-ancestors 'none'; sandbox allow-same-origin"

// evalRun is a brief as the API sends it.
func evalRun(b eval.Brief, now time.Time) wire.EvalRun {
	out := wire.EvalRun{ID: b.ID, Suite: b.Suite, Provider: b.Provider, Models: b.Models, Repeat: b.Repeat,
		State: b.State(now), TaskCount: b.Tasks, SuiteTaskCount: b.SuiteTasks, Planned: b.Planned, Done: b.Done, Passed: b.Passed,
		Problems: b.Problems, Scores: make([]wire.EvalScore, len(b.Scores)), Error: b.Err}
	if out.Models == nil {
		out.Models = []string{}
	}
	for _, t := range []struct {
		at  time.Time
		dst **time.Time
	}{{b.StartedAt, &out.StartedAt}, {b.EndedAt, &out.EndedAt}, {b.ModTime, &out.UpdatedAt}} {
		if !t.at.IsZero() {
			v := ts(t.at)
			*t.dst = &v
		}
	}
	for i, m := range b.Scores {
		out.Scores[i] = wire.EvalScore{Model: m.Model, Runs: m.Runs, Passes: m.Passes, Rate: m.Rate}
	}
	return out
}

func (a *API) listEvals(w http.ResponseWriter, r *http.Request) error {
	list, total, err := a.evals.List(clampParam(r, "limit", maxEvalRuns, 1, maxEvalRuns))
	if err != nil {
		return err
	}
	out := wire.EvalRunList{Runs: make([]wire.EvalRun, len(list)), Total: total, Truncated: total > len(list)}
	now := time.Now()
	for i, b := range list {
		out.Runs[i] = evalRun(b, now)
	}
	return writeJSON(w, http.StatusOK, out)
}

// evalRunDetail is the answer of GET /evals/:id: the run summed up, and,
// when its results.json could be read, the record itself and the
// comparison of its models (core/eval's summary, as the report shows it).
type evalRunDetail struct {
	Run     wire.EvalRun  `json:"run"`
	Record  *eval.Record  `json:"record,omitempty"`
	Summary *eval.Summary `json:"summary,omitempty"`
}

func (a *API) getEval(w http.ResponseWriter, r *http.Request) error {
	b, rec, err := a.evals.Get(r.PathValue("id"))
	if err != nil {
		return err
	}
	out := evalRunDetail{Run: evalRun(b, time.Now())}
	if b.Err == "" {
		rec.StartedAt, rec.EndedAt = ts(rec.StartedAt), ts(rec.EndedAt)
		for _, l := range []*[]string{&rec.Models, &rec.Tasks} {
			if *l == nil {
				*l = []string{}
			}
		}
		if rec.Results == nil {
			rec.Results = []eval.Result{}
		}
		s := eval.Summarize(rec)
		if s.Models == nil {
			s.Models = []eval.ModelSummary{}
		}
		if s.Tasks == nil {
			s.Tasks = []eval.TaskRow{}
		}
		out.Record, out.Summary = &rec, &s
	}
	return writeJSON(w, http.StatusOK, out)
}

// evalReport renders a run's HTML report (core/eval's, as `hivecrew eval
// report` writes it), its links to replays made relative: they open in
// this web UI, whatever address the run was started with.
func (a *API) evalReport(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	b, rec, err := a.evals.Get(id)
	if err != nil {
		return err
	}
	if b.Err != "" {
		return errdefs.Conflictf("eval run %s cannot be read: %s", id, b.Err)
	}
	rec.WebBase = ""
	var page bytes.Buffer
	if err := eval.WriteReport(&page, rec); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ReportPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if r.URL.Query().Get("download") == "1" {
		h.Set("Content-Disposition", `attachment; filename="eval-`+id+`.html"`)
	}
	w.WriteHeader(http.StatusOK)
	_, err = page.WriteTo(w)
	return err
}

// deleteEval removes a run's folder; a running one only with ?force=1.
func (a *API) deleteEval(w http.ResponseWriter, r *http.Request) error {
	force := false
	if v := r.URL.Query().Get("force"); v != "" {
		var err error
		if force, err = strconv.ParseBool(v); err != nil {
			return errdefs.Invalidf("force %q: want 1 or 0", v)
		}
	}
	if err := a.evals.Remove(r.PathValue("id"), force, time.Now()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
