package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/api"
	"github.com/hivecrew/hivecrew/core/eval"
	"github.com/hivecrew/hivecrew/core/wire"
)

// xss is what a guest could leave in a result's detail: a checker's last
// line of output is the guest's to choose.
const xss = `<img src=x onerror="fetch('/api/v1/apikeys',{method:'POST'})"><script>alert(1)</script>`

// writeEvalRun writes rec as a run folder of evals, its results.json
// modified at mod.
func writeEvalRun(t *testing.T, evals string, rec eval.Record, mod time.Time) string {
	t.Helper()
	dir := filepath.Join(evals, rec.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := eval.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "results.json"), mod, mod); err != nil {
		t.Fatal(err)
	}
	return dir
}

// finishedRun is a run of two tasks on two models, one result's detail
// hostile.
func finishedRun(id string) eval.Record {
	start := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	return eval.Record{ID: id, Suite: "linux-desktop", Provider: "Scripted", Models: []string{"big", "small"}, Repeat: 1,
		WebBase: "http://203.0.113.9:5482", StartedAt: start, EndedAt: start.Add(5*time.Minute + 300*time.Millisecond),
		Tasks: []string{"rename-draft", "csv-to-json"}, Problems: []eval.Problem{{File: "broken.json", Err: "unknown field"}},
		Results: []eval.Result{
			{Task: "rename-draft", Model: "big", Attempt: 1, HelperTask: "task-1", Status: "completed", Success: true, Category: eval.Passed, Seconds: 40},
			{Task: "rename-draft", Model: "small", Attempt: 1, HelperTask: "task-2", Status: "completed", Category: eval.CheckerFailed, Detail: xss},
			{Task: "csv-to-json", Model: "big", Attempt: 1, HelperTask: "task-3", Status: "completed", Success: true, Category: eval.Passed},
			{Task: "csv-to-json", Model: "small", Attempt: 1, Category: eval.SetupError, Detail: "no such template"},
		}}
}

// TestEvalRuns: the runs in <data>/Evals are listed newest first and
// summed up (a running one with its progress, a malformed one with its
// error rather than a failed list); a run answers its record and its
// summary in the API's shape; its report is core/eval's, with links to
// this web UI's replays, guest-chosen text escaped, and a policy that
// allows no script; a running run is removed only when forced.
func TestEvalRuns(t *testing.T) {
	h := startHelper(t, nil)
	evals := h.paths.Evals()
	var list wire.EvalRunList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals", nil), &list)
	if list.Runs == nil || len(list.Runs) != 0 || list.Total != 0 || list.Truncated {
		t.Fatalf("no Evals folder: %+v", list)
	}

	now := time.Now()
	finished := writeEvalRun(t, evals, finishedRun("20260301-100000-aaaa"), now.Add(-time.Hour))
	running := eval.Record{ID: "20260302-100000-bbbb", Suite: "linux-desktop", Provider: "Scripted", Models: []string{"big"}, Repeat: 3,
		StartedAt: now.Add(-time.Minute), Tasks: []string{"a", "b"}, SuiteTasks: 41, Results: []eval.Result{{Task: "a", Model: "big", Attempt: 1, Success: true, Category: eval.Passed}}}
	writeEvalRun(t, evals, running, now)
	os.MkdirAll(filepath.Join(evals, "20260303-100000-cccc"), 0o700)
	os.WriteFile(filepath.Join(evals, "20260303-100000-cccc", "results.json"), []byte(`{"id": "20260303-100000-cccc", "results": [{"task": 1`), 0o600)

	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals", nil), &list)
	if got := []string{list.Runs[0].ID, list.Runs[1].ID, list.Runs[2].ID}; list.Total != 3 || list.Truncated ||
		!slices.Equal(got, []string{"20260303-100000-cccc", running.ID, "20260301-100000-aaaa"}) {
		t.Fatalf("list: %v of %d; want newest first", got, list.Total)
	}
	if bad := list.Runs[0]; !strings.Contains(bad.Error, "malformed") || bad.State != "interrupted" || bad.Models == nil || bad.Scores == nil {
		t.Errorf("the malformed run: %+v", bad)
	}
	if r := list.Runs[1]; r.State != "running" || r.EndedAt != nil || r.Planned != 6 || r.Done != 1 || r.Passed != 1 || r.TaskCount != 2 || r.SuiteTaskCount != 41 || r.Repeat != 3 {
		t.Errorf("the running run: %+v", r)
	}
	f := list.Runs[2]
	if f.State != "finished" || f.EndedAt == nil || f.Planned != 4 || f.Done != 4 || f.Passed != 2 || f.Problems != 1 || f.TaskCount != 2 || f.SuiteTaskCount != 3 ||
		len(f.Scores) != 2 || f.Scores[0] != (wire.EvalScore{Model: "big", Runs: 2, Passes: 2, Rate: 1}) || f.Scores[1] != (wire.EvalScore{Model: "small", Runs: 2, Passes: 0, Rate: 0}) {
		t.Errorf("the finished run: %+v", f)
	}
	if !f.StartedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || f.EndedAt.Nanosecond() != 0 {
		t.Errorf("times are not in whole seconds: %v %v", f.StartedAt, f.EndedAt)
	}
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals?limit=1", nil), &list)
	if len(list.Runs) != 1 || list.Total != 3 || !list.Truncated {
		t.Errorf("limit=1: %d runs of %d, truncated %v", len(list.Runs), list.Total, list.Truncated)
	}

	// One run: the record and core/eval's summary.
	var detail struct {
		Run     wire.EvalRun
		Record  eval.Record
		Summary map[string]json.RawMessage
	}
	body := h.expect(200, "GET", "/api/v1/evals/20260301-100000-aaaa", nil)
	json.Unmarshal(body, &detail)
	if detail.Run.ID != "20260301-100000-aaaa" || len(detail.Record.Results) != 4 || detail.Record.Results[1].Detail != xss ||
		detail.Record.StartedAt.Nanosecond() != 0 {
		t.Fatalf("GET a run: %s", body)
	}
	var models []eval.ModelSummary
	var tasks []struct {
		Task  string
		Cells []map[string]any
	}
	json.Unmarshal(detail.Summary["models"], &models)
	json.Unmarshal(detail.Summary["tasks"], &tasks)
	if len(models) != 2 || models[0].Model != "big" || models[0].Passes != 2 || models[1].Failures[eval.CheckerFailed] != 1 ||
		len(tasks) != 2 || tasks[0].Task != "rename-draft" || len(tasks[0].Cells) != 2 || tasks[0].Cells[1]["passes"] != 0.0 {
		t.Fatalf("summary: %s", body)
	}
	if _, ok := tasks[0].Cells[0]["results"]; ok || strings.Contains(string(body), `"Record"`) {
		t.Errorf("the summary repeats the record: %s", body)
	}
	var broken map[string]json.RawMessage
	body = h.expect(200, "GET", "/api/v1/evals/20260303-100000-cccc", nil)
	json.Unmarshal(body, &broken)
	if !strings.Contains(string(broken["run"]), `"error":"results.json is malformed`) || broken["record"] != nil || broken["summary"] != nil {
		t.Errorf("GET the malformed run: %s", body)
	}

	// The report: rendered here, links to this web UI, the guest's text
	// escaped, and the policy as a second wall.
	code, page, hdr := h.reqHeader("GET", "/api/v1/evals/20260301-100000-aaaa/report", nil)
	if code != 200 || hdr.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("report: %d %s", code, hdr.Get("Content-Type"))
	}
	csp := hdr.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "sandbox", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("report policy %q lacks %s", csp, want)
		}
	}
	if csp != api.ReportPolicy || strings.Contains(csp, "script-src") || strings.Contains(csp, "allow-scripts") || hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("report headers: %v", hdr)
	}
	html := string(page)
	for _, want := range []string{`<a href="/tasks/task-1/replay">passed</a>`, `<a href="/tasks/task-2/replay">checker failed</a>`,
		"&lt;img src=x onerror=", "&lt;script&gt;alert(1)&lt;/script&gt;", "Suite linux-desktop", "broken.json"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if strings.Contains(html, "203.0.113.9") || strings.Contains(html, "<img") || strings.Contains(html, "<script") {
		t.Errorf("the report links elsewhere or carries the guest's markup:\n%s", html)
	}
	_, _, hdr = h.reqHeader("GET", "/api/v1/evals/20260301-100000-aaaa/report?download=1", nil)
	if hdr.Get("Content-Disposition") != `attachment; filename="eval-20260301-100000-aaaa.html"` {
		t.Errorf("download: %q", hdr.Get("Content-Disposition"))
	}
	h.expect(409, "GET", "/api/v1/evals/20260303-100000-cccc/report", nil)

	// Removing: a running run is a conflict unless forced.
	if _, out := h.req("DELETE", "/api/v1/evals/"+running.ID, nil); !strings.Contains(string(out), "running") {
		t.Errorf("removing a running run: %s", out)
	}
	h.expect(409, "DELETE", "/api/v1/evals/"+running.ID, nil)
	h.expect(400, "DELETE", "/api/v1/evals/"+running.ID+"?force=maybe", nil)
	h.expect(204, "DELETE", "/api/v1/evals/"+running.ID+"?force=1", nil)
	h.expect(204, "DELETE", "/api/v1/evals/20260301-100000-aaaa", nil)
	h.expect(204, "DELETE", "/api/v1/evals/20260303-100000-cccc", nil)
	if _, err := os.Stat(finished); !os.IsNotExist(err) {
		t.Errorf("the run's folder is still there: %v", err)
	}
	h.expect(404, "GET", "/api/v1/evals/20260301-100000-aaaa", nil)
	h.expect(404, "DELETE", "/api/v1/evals/20260301-100000-aaaa", nil)
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals", nil), &list)
	if len(list.Runs) != 0 {
		t.Errorf("after removing every run: %+v", list)
	}

	// At most 200 are listed, and the list says so.
	for i := range 201 {
		writeEvalRun(t, evals, eval.Record{ID: fmt.Sprintf("20250101-%06d-0000", i), Models: []string{"m"}, EndedAt: now}, now)
	}
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals?limit=100000", nil), &list)
	if len(list.Runs) != 200 || list.Total != 201 || !list.Truncated || list.Runs[0].ID != "20250101-000200-0000" {
		t.Errorf("201 runs: %d listed of %d, truncated %v, first %s", len(list.Runs), list.Total, list.Truncated, list.Runs[0].ID)
	}
}

// TestEvalRunIDsStayInTheEvalsFolder makes the hostile moves for real:
// ids that climb out (.., encoded or not), absolute paths, and run
// folders or results.json that are symbolic links to data elsewhere.
// Nothing outside the Evals folder is read or removed, and a link is not
// followed out.
func TestEvalRunIDsStayInTheEvalsFolder(t *testing.T) {
	h := startHelper(t, nil)
	evals := h.paths.Evals()
	outside := t.TempDir()
	elsewhere := writeEvalRun(t, outside, finishedRun("20260301-100000-ffff"), time.Now().Add(-time.Hour))
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("keep me"), 0o600)
	if err := os.MkdirAll(evals, 0o700); err != nil {
		t.Fatal(err)
	}
	// A run folder that is a link to a run elsewhere.
	if err := os.Symlink(elsewhere, filepath.Join(evals, "20260301-100000-ffff")); err != nil {
		t.Fatal(err)
	}
	// A real run folder whose results.json links out.
	linked := filepath.Join(evals, "20260302-100000-eeee")
	os.MkdirAll(linked, 0o700)
	if err := os.Symlink(filepath.Join(elsewhere, "results.json"), filepath.Join(linked, "results.json")); err != nil {
		t.Fatal(err)
	}
	// A run to climb out of.
	writeEvalRun(t, evals, finishedRun("20260303-100000-dddd"), time.Now().Add(-time.Hour))

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string) (int, string) {
		req, err := http.NewRequest(method, "http://"+h.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+h.key)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, id := range []string{"..", "%2e%2e", "%2E%2E", "..%2F..%2F" + filepath.Base(outside), "%2e%2e%2fsecret.txt",
		"20260303-100000-dddd%2F..%2F..", "20260303-100000-dddd%2F..%2F20260301-100000-ffff", "%2F" + strings.ReplaceAll(strings.TrimPrefix(outside, "/"), "/", "%2F"),
		"%2Fetc", "20260301-100000-ffff", "20260301-100000-FFFF", "20260301-100000-ffff%00", ".%2F20260303-100000-dddd"} {
		for _, method := range []string{"GET", "DELETE"} {
			for _, suffix := range []string{"", "/report"} {
				if method == "DELETE" && suffix != "" {
					continue
				}
				path := "/api/v1/evals/" + id + suffix
				code, body := send(method, path)
				t.Logf("%s %s: %d", method, path, code)
				if code < 300 || code >= 500 {
					t.Errorf("%s %s: %d %s; want it refused", method, path, code, body)
				}
				if strings.Contains(body, "linux-desktop") {
					t.Errorf("%s %s read the run outside: %s", method, path, body)
				}
			}
		}
	}
	// The real run folder with a link out reads as broken, never as the
	// run elsewhere; removing it removes the link only.
	var detail struct{ Run wire.EvalRun }
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals/20260302-100000-eeee", nil), &detail)
	if detail.Run.Error == "" || detail.Run.Suite != "" {
		t.Errorf("results.json linking out: %+v", detail.Run)
	}
	h.expect(409, "GET", "/api/v1/evals/20260302-100000-eeee/report", nil)
	var list wire.EvalRunList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/evals", nil), &list)
	if len(list.Runs) != 2 || list.Runs[0].ID != "20260303-100000-dddd" || list.Runs[1].Error == "" {
		t.Errorf("the list: %+v; want the two real folders, the linked-out one with an error", list.Runs)
	}
	h.expect(204, "DELETE", "/api/v1/evals/20260302-100000-eeee", nil)
	h.expect(404, "DELETE", "/api/v1/evals/20260301-100000-ffff", nil)
	for _, p := range []string{secret, filepath.Join(elsewhere, "results.json"), filepath.Join(evals, "20260303-100000-dddd", "results.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(evals, "20260301-100000-ffff")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked run folder: %v %v", fi, err)
	}
}

// TestEvalRunsNeedAKeyOrASession: reading needs an API key or a web
// session; removing with a session needs the page's token too.
func TestEvalRunsNeedAKeyOrASession(t *testing.T) {
	h := startHelper(t, nil)
	writeEvalRun(t, h.paths.Evals(), finishedRun("20260301-100000-aaaa"), time.Now().Add(-time.Hour))
	for _, p := range []string{"/api/v1/evals", "/api/v1/evals/20260301-100000-aaaa", "/api/v1/evals/20260301-100000-aaaa/report"} {
		if code, _ := h.req("GET", p, nil, "Authorization", ""); code != 401 {
			t.Errorf("GET %s without a key: %d; want 401", p, code)
		}
	}
	if code, _ := h.req("DELETE", "/api/v1/evals/20260301-100000-aaaa", nil, "Authorization", ""); code != 401 {
		t.Errorf("DELETE without a key: %d; want 401", code)
	}
	cookie, token, _ := signIn(t, h, "")
	if code, body := h.as(cookie, "", "GET", "/api/v1/evals/20260301-100000-aaaa/report", nil); code != 200 || !strings.Contains(body, "linux-desktop") {
		t.Errorf("the report with a session: %d", code)
	}
	if code, _ := h.as(cookie, "", "DELETE", "/api/v1/evals/20260301-100000-aaaa", nil); code != 403 {
		t.Errorf("DELETE with the cookie alone: %d; want 403", code)
	}
	if code, body := h.as(cookie, token, "DELETE", "/api/v1/evals/20260301-100000-aaaa", nil); code != 204 {
		t.Errorf("DELETE with the session's token: %d %s", code, body)
	}
}
