package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestRunWithoutProviderSaysHowToAddOne: before any provider exists, a new
// task is refused at once with the command that adds one.
func TestRunWithoutProviderSaysHowToAddOne(t *testing.T) {
	h := startHelper(t, nil)
	out := h.expect(400, "POST", "/api/v1/tasks", map[string]any{"description": "hello"})
	if !strings.Contains(string(out), "hivecrew providers add") {
		t.Fatalf("message does not say how to add a provider: %s", out)
	}
}

// multipartTask builds a multipart POST /tasks body.
func multipartTask(fields map[string]string, files map[string]string) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	for name, data := range files {
		w, _ := mw.CreateFormFile("files", name)
		w.Write([]byte(data))
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// TestTaskContract: a task with an input file runs on the fake backend:
// the agent reads inbox/, writes outbox/, and every task endpoint answers
// as API.md says, including its errors.
func TestTaskContract(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.MaxUploadBytes = 1 << 20 })
	h.addProvider()
	h.llm.Script("[[contract]]",
		llmtest.Tool("read_file", map[string]any{"path": "inbox/numbers.txt"}),
		llmtest.Tool("write_file", map[string]any{"path": "outbox/sum.txt", "contents": "6\n"}),
		llmtest.Text("The sum is 6."), llmtest.Verdict(true, "Wrote the sum 6 to outbox/sum.txt."))
	ct, body := multipartTask(map[string]string{"description": "Add the numbers in inbox/numbers.txt [[contract]]", "toolPolicy": `{"run_shell":"allow"}`},
		map[string]string{"numbers.txt": "1\n2\n3\n"})
	out := h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	var task wire.Task
	json.Unmarshal(out, &task)
	if task.ID == "" || task.ProviderName != "Scripted" || task.ModelID != "scripted" || len(task.InputFiles) != 1 || task.InputFiles[0].Size != 6 {
		t.Fatalf("created task = %s", out)
	}
	if task.ToolPolicy["run_shell"] != "allow" {
		t.Fatalf("toolPolicy not kept: %+v", task.ToolPolicy)
	}
	done := h.waitTask(task.ID, "the end", terminal)
	if done.Status != "completed" || done.WasSuccessful == nil || !*done.WasSuccessful || *done.ResultSummary != "Wrote the sum 6 to outbox/sum.txt." {
		t.Fatalf("task ended %+v", done)
	}
	reqs := h.llm.Requests("[[contract]]")
	// read_file's text result, as the model reads it (a JSON string in
	// the request: its line breaks escaped once).
	if len(reqs) < 3 || !strings.Contains(reqs[1], `text, 6 bytes:\n1\n2\n3`) {
		t.Fatalf("the agent's read of inbox/numbers.txt did not reach the model (%d requests)", len(reqs))
	}
	if done.StepCount == nil || *done.StepCount != 3 || done.TokenUsage == nil || done.TokenUsage.Total == 0 || done.Duration == nil || done.VMID == "" {
		t.Fatalf("task details missing: %+v", done)
	}

	// Files.
	var files wire.TaskFiles
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/files", nil), &files)
	if len(files.OutputFiles) != 1 || files.OutputFiles[0].Name != "sum.txt" || files.OutputFiles[0].Size != 2 || len(files.InputFiles) != 1 {
		t.Fatalf("files = %+v", files)
	}
	if got := h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/files/sum.txt", nil); string(got) != "6\n" {
		t.Fatalf("output bytes = %q", got)
	}
	if got := h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/files/numbers.txt?type=input", nil); string(got) != "1\n2\n3\n" {
		t.Fatalf("input bytes = %q", got)
	}
	h.expect(404, "GET", "/api/v1/tasks/"+task.ID+"/files/sum.txt?type=input", nil)
	// As Swift: a type other than input means an output.
	if got := h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/files/sum.txt?type=both", nil); string(got) != "6\n" {
		t.Fatalf("type=both: %q", got)
	}
	for _, evil := range []string{"..%2F..%2Fhivecrew.db", "..%2Finputs%2Fnumbers.txt", "%2Fetc%2Fpasswd", "nope.txt"} {
		h.expect(404, "GET", "/api/v1/tasks/"+task.ID+"/files/"+evil, nil)
	}

	// Screenshot, activity, events, export.
	code, shot := h.req("GET", "/api/v1/tasks/"+task.ID+"/screenshot", nil)
	if code != 200 || !bytes.HasPrefix(shot, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %d, %d bytes", code, len(shot))
	}
	var act wire.Activity
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/activity", nil), &act)
	if act.Total != int64(len(act.Events)) || act.Total < 10 {
		t.Fatalf("activity: %d events, total %d", len(act.Events), act.Total)
	}
	last := act.Events[len(act.Events)-1]
	if last.Type != "status_change" || last.Data.Status != "completed" {
		t.Fatalf("last event = %+v", last)
	}
	for i, e := range act.Events {
		if e.Seq != int64(i+1) || e.Data.TaskID != task.ID {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
	var since wire.Activity
	json.Unmarshal(h.expect(200, "GET", fmt.Sprintf("/api/v1/tasks/%s/activity?since=%d", task.ID, act.Total-2), nil), &since)
	if len(since.Events) != 2 || since.Total != act.Total {
		t.Fatalf("activity?since: %d events", len(since.Events))
	}
	h.expect(400, "GET", "/api/v1/tasks/"+task.ID+"/activity?since=-1", nil)
	var withShot *wire.Event
	for i := range act.Events {
		if act.Events[i].Data.Screenshot != "" {
			withShot = &act.Events[i]
			break
		}
	}
	if withShot == nil {
		t.Fatal("no event links a screenshot")
	}
	if code, b := h.req("GET", withShot.Data.Screenshot, nil); code != 200 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("event screenshot: %d", code)
	}
	var streamed []wire.Event
	if err := h.tcp().Events(context.Background(), task.ID, 0, func(e wire.Event) error { streamed = append(streamed, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(streamed) != len(act.Events) {
		t.Fatalf("SSE replayed %d events, activity has %d", len(streamed), len(act.Events))
	}
	for _, f := range []string{"json", "markdown", "html"} {
		b := h.expect(200, "GET", "/api/v1/tasks/"+task.ID+"/export?format="+f, nil)
		if !strings.Contains(string(b), "Wrote the sum 6") {
			t.Fatalf("export %s lacks the summary", f)
		}
	}
	h.expect(400, "GET", "/api/v1/tasks/"+task.ID+"/export?format=pdf", nil)

	// Listing.
	var list wire.TaskList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks?status=completed,failed&limit=10&sort=completedAt&order=asc", nil), &list)
	if list.Total != 1 || len(list.Tasks) != 1 || list.Limit != 10 || *list.Tasks[0].InputFileCount != 1 || *list.Tasks[0].OutputFileCount != 1 || list.Tasks[0].InputFiles != nil {
		t.Fatalf("list = %+v", list)
	}
	// The query is read as Swift reads it: snake_case statuses too, limit
	// clamped, unknown sort and order are the defaults, an unknown status
	// matches nothing.
	for query, want := range map[string][2]int64{ // total, limit
		"status=done": {0, 50}, "status=timed_out,completed": {1, 50}, "limit=0": {1, 1}, "limit=500": {1, 200},
		"limit=x": {1, 50}, "offset=-1": {1, 50}, "sort=title": {1, 50}, "order=ASC": {1, 50}, "order=up": {1, 50},
	} {
		var l wire.TaskList
		json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks?"+query, nil), &l)
		if l.Total != want[0] || int64(l.Limit) != want[1] {
			t.Errorf("%s: total %d limit %d; want %v", query, l.Total, l.Limit, want)
		}
	}

	// Actions and their errors.
	h.expect(404, "GET", "/api/v1/tasks/nope", nil)
	h.expect(404, "PATCH", "/api/v1/tasks/nope", map[string]any{"action": "pause"})
	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "explode"})
	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{})
	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "pause", "instructons": "x"})
	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, "{not json")
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "pause"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "resume"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "cancel"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "approve_plan"})
	// No agent to answer: 404, as Swift.
	h.expect(404, "POST", "/api/v1/tasks/"+task.ID+"/question/answer", map[string]any{"questionId": "q1", "answer": "yes"})
	h.expect(404, "POST", "/api/v1/tasks/"+task.ID+"/permission/respond", map[string]any{"permissionId": "p1", "approved": true})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "instruct", "instructions": "faster"})
	h.expect(400, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "instruct"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "approve_writeback"})
	h.expect(204, "GET", "/api/v1/tasks/"+task.ID+"/writeback", nil)
	h.expect(400, "POST", "/api/v1/tasks/"+task.ID+"/permission/respond", map[string]any{"permissionId": "p1"})
	h.expect(204, "GET", "/api/v1/tasks/"+task.ID+"/question", nil)
	h.expect(204, "GET", "/api/v1/tasks/"+task.ID+"/permission", nil)
	h.expect(409, "POST", "/api/v1/tasks/"+task.ID+"/instructions", map[string]any{"text": "faster"})
	h.expect(400, "POST", "/api/v1/tasks/"+task.ID+"/instructions", map[string]any{"text": " "})
	h.expect(409, "POST", "/api/v1/tasks/"+task.ID+"/takeover", map[string]any{"action": "start"})
	h.expect(400, "POST", "/api/v1/tasks/"+task.ID+"/takeover", map[string]any{"action": "grab"})
	h.expect(409, "POST", "/api/v1/tasks/"+task.ID+"/input", map[string]any{"type": "click", "x": 1, "y": 1})
	h.expect(400, "POST", "/api/v1/tasks/"+task.ID+"/input", map[string]any{"type": "teleport"})
	h.expect(409, "GET", "/api/v1/tasks/"+task.ID+"/stream", nil)

	// Rerun: a new task with the same configuration and inputs.
	var rerun wire.Task
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "rerun"}), &rerun)
	if rerun.ID == task.ID || rerun.RerunOf != task.ID || rerun.Description != task.Description || len(rerun.InputFiles) != 1 {
		t.Fatalf("rerun = %+v", rerun)
	}
	h.waitTask(rerun.ID, "the rerun's end", terminal)

	// Delete.
	h.expect(204, "DELETE", "/api/v1/tasks/"+task.ID, nil)
	h.expect(404, "GET", "/api/v1/tasks/"+task.ID, nil)
	h.expect(404, "DELETE", "/api/v1/tasks/"+task.ID, nil)
}

// TestCreateTaskValidation: each bad field is a 400 naming it (an unknown
// provider a 404, as Swift); a misspelt field is a 400 naming the field
// meant, while a field nothing resembles is ignored and named in a
// header; an upload over the cap is a 413.
func TestCreateTaskValidation(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.MaxUploadBytes = 64 << 10 })
	h.addProvider()
	for field, body := range map[string]map[string]any{
		"description":         {"description": "  "},
		"timeoutMinutes":      {"description": "x", "timeoutMinutes": -1},
		"maxIterations":       {"description": "x", "maxIterations": 1000000},
		"networkMode":         {"description": "x", "networkMode": "wifi"},
		"toolPolicy":          {"description": "x", "toolPolicy": map[string]string{"run_shell": "maybe"}},
		"outputDirectory":     {"description": "x", "outputDirectory": "relative/dir"},
		"templateId":          {"description": "x", "templateId": "none"},
		"reasoningEffort":     {"description": "x", "reasoningEffort": "extreme"},
		"priority":            {"description": "x", "priority": "urgent"},
		"allowHosts":          {"description": "x", "allowHosts": []string{"not a host"}},
		"mentionedSkillNames": {"description": "x", "mentionedSkillNames": "one"},
		"reasoningEnabled":    {"description": "x", "reasoningEnabled": "yes"},
		"setupCommand":        {"description": "x", "setupCommand": 3},
		"checkCommand":        {"description": "x", "checkCommand": strings.Repeat("x", 64<<10+1)},
	} {
		out := h.expect(400, "POST", "/api/v1/tasks", body)
		if !strings.Contains(string(out), field) {
			t.Errorf("%s: message %s does not name the field", field, out)
		}
	}
	ct, body := multipartTask(map[string]string{"description": "big"}, map[string]string{"big.bin": strings.Repeat("x", 100<<10)})
	h.expect(413, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	ct, body = multipartTask(map[string]string{"description": "x"}, map[string]string{"../escape.txt": "x"})
	h.expect(400, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	ct, body = multipartTask(map[string]string{"description": "x", "planFirst": "perhaps"}, nil)
	h.expect(400, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	ct, body = multipartTask(map[string]string{"description": "x", "toolPolicy": "{"}, nil)
	h.expect(400, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	ct, body = multipartTask(map[string]string{"description": "x", "setupCommand": "a\x00b"}, nil)
	if out := h.expect(400, "POST", "/api/v1/tasks", body, "Content-Type", ct); !strings.Contains(string(out), "setupCommand") {
		t.Errorf("a setup command with NUL: %s", out)
	}
	var list wire.TaskList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks", nil), &list)
	if list.Total != 0 {
		t.Fatalf("%d tasks stored from refused requests", list.Total)
	}
	if out := h.expect(400, "POST", "/api/v1/tasks", map[string]any{"description": "x", "outputDirectry": "/tmp/x"}); !strings.Contains(string(out), `did you mean \"outputDirectory\"`) {
		t.Errorf("misspelt outputDirectory: %s", out)
	}
	if out := h.expect(404, "POST", "/api/v1/tasks", map[string]any{"description": "x", "providerName": "Nobody"}); !strings.Contains(string(out), "providerName") {
		t.Errorf("unknown provider: %s", out)
	}
	// As Swift: a JSON body is JSON whatever its Content-Type says (curl -d
	// sends a form type), and a field nothing resembles is ignored, and
	// said so.
	code, _, hdr := h.reqHeader("POST", "/api/v1/tasks", `{"description":"x","colour":"blue"}`, "Content-Type", "application/x-www-form-urlencoded")
	if code != http.StatusCreated || hdr.Get("X-Hivecrew-Ignored-Fields") != "colour" {
		t.Fatalf("form-typed JSON with an unknown field: %d, ignored %q", code, hdr.Get("X-Hivecrew-Ignored-Fields"))
	}
}
