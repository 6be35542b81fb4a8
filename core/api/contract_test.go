package api_test

// The wire contract with the Swift Hivecrew server's clients: the Python
// SDK (johnbean393/hivecrew-python) and Swift code decoding with
// Foundation's .iso8601 strategy. testdata/sdk-contract.json is a schema
// written by hand from the SDK's pydantic models and the Swift server's
// Codable models (field names, JSON types, optionality, enum values): it
// is what those clients accept, not what we send. These tests make every
// request the SDK makes, the way it makes it, and check status codes and
// bodies against it; then Swift-shaped requests, a Swift-shaped decoder,
// and the races a client sees (an answer to POST /tasks that is not
// queued, a cancel before the agent starts that ends failed).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// contract holds the resolved schema of each response.
type contract map[string]*jsonschema.Resolved

func loadContract(t *testing.T) contract {
	t.Helper()
	raw, err := os.ReadFile("testdata/sdk-contract.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs      map[string]json.RawMessage `json:"$defs"`
		Responses map[string]json.RawMessage `json:"responses"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := contract{}
	for name, body := range doc.Responses {
		var sch jsonschema.Schema
		if err := json.Unmarshal(body, &sch); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		sch.Defs = map[string]*jsonschema.Schema{}
		for d, b := range doc.Defs {
			var s jsonschema.Schema
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("def %s: %v", d, err)
			}
			sch.Defs[d] = &s
		}
		r, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		out[name] = r
	}
	return out
}

// check validates a body against the named schema.
func (c contract) check(t *testing.T, name string, body []byte) {
	t.Helper()
	r, ok := c[name]
	if !ok {
		t.Fatalf("no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", name, err, body)
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s does not satisfy the SDK/Swift contract: %v\n%s", name, err, body)
	}
}

// TestContractRejectsWhatClientsWouldReject: the contract is a check that
// can fail. Each of these bodies is refused by the SDK or by Swift's
// decoder, and must be refused by the schema.
func TestContractRejectsWhatClientsWouldReject(t *testing.T) {
	c := loadContract(t)
	task := `{"id":"a","title":"t","description":"d","status":"queued","providerName":"p","modelId":"m","createdAt":"2026-11-25T10:00:00Z","inputFiles":[],"outputFiles":[]}`
	c.check(t, "Task", []byte(task))
	for name, bad := range map[string]string{
		"float duration":       strings.Replace(task, `"status"`, `"duration":1.5,"status"`, 1),
		"fractional seconds":   strings.Replace(task, `10:00:00Z`, `10:00:00.123456789Z`, 1),
		"missing inputFiles":   strings.Replace(task, `"inputFiles":[],`, ``, 1),
		"null outputFiles":     strings.Replace(task, `"outputFiles":[]`, `"outputFiles":null`, 1),
		"snake_case status":    strings.Replace(task, `"queued"`, `"waiting_for_vm"`, 1),
		"file without a type":  strings.Replace(task, `"inputFiles":[]`, `"inputFiles":[{"name":"a","size":1}]`, 1),
		"local-offset date":    strings.Replace(task, `10:00:00Z`, `10:00:00+01:00`, 1),
		"missing title":        strings.Replace(task, `"title":"t",`, ``, 1),
		"string token counts":  strings.Replace(task, `"status"`, `"tokenUsage":{"prompt":"1","completion":1,"total":2},"status"`, 1),
		"status outside enums": strings.Replace(task, `"queued"`, `"done"`, 1),
	} {
		var v any
		json.Unmarshal([]byte(bad), &v)
		if err := c["Task"].Validate(v); err == nil {
			t.Errorf("the contract accepts a task with %s", name)
		}
	}
	var v any
	json.Unmarshal([]byte(`{"status":"ok","version":"1","uptime":1.5,"agents":{"running":0,"paused":0,"queued":0,"maxConcurrent":2},"vms":{"active":0,"pending":0,"available":0},"resources":{"memoryTotalGB":1}}`), &v)
	if c["SystemStatus"].Validate(v) == nil {
		t.Error("the contract accepts a float uptime")
	}
	json.Unmarshal([]byte(`{"error":{"code":"invalid","message":"x"}}`), &v)
	if c["Error"].Validate(v) == nil {
		t.Error("the contract accepts the error code invalid")
	}
}

// sdkMultipart builds a body as requests does for data= and files=.
func sdkMultipart(fields [][2]string, files map[string]string) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	for name, data := range files {
		w, _ := mw.CreateFormFile("files", name)
		w.Write([]byte(data))
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// TestSDKCallsSatisfyTheContract makes every request of the SDK's public
// methods, as it makes them, and checks each answer's status and body.
func TestSDKCallsSatisfyTheContract(t *testing.T) {
	c := loadContract(t)
	h := startHelper(t, nil)
	prov := h.addProvider()
	h.llm.Script("[[sdk-run]]", llmtest.Tool("write_file", map[string]any{"path": "outbox/report.txt", "contents": "done"}),
		llmtest.Text("Done."), llmtest.Verdict(true, "Wrote the report."))
	ok := func(status int, name, method, path string, body any, hdr ...string) []byte {
		t.Helper()
		out := h.expect(status, method, path, body, hdr...)
		if name != "" {
			c.check(t, name, out)
		}
		return out
	}

	// system, templates, providers
	ok(200, "SystemStatus", "GET", "/api/v1/system/status", nil)
	ok(200, "SystemConfig", "GET", "/api/v1/system/config", nil)
	var tl wire.TemplateList
	json.Unmarshal(ok(200, "TemplateList", "GET", "/api/v1/templates", nil), &tl)
	ok(200, "Template", "GET", "/api/v1/templates/"+tl.Templates[0].ID, nil)
	ok(200, "ProviderList", "GET", "/api/v1/providers", nil)
	ok(200, "Provider", "GET", "/api/v1/providers/"+prov.ID, nil)
	ok(200, "ModelList", "GET", "/api/v1/providers/"+prov.ID+"/models", nil)
	ok(200, "SkillList", "GET", "/api/v1/skills", nil)
	ok(200, "Provisioning", "GET", "/api/v1/provisioning", nil)

	// tasks.create (JSON), tasks.create (multipart with files), tasks.run
	var task wire.Task
	json.Unmarshal(ok(201, "Task", "POST", "/api/v1/tasks", map[string]any{"description": "Say hi", "providerName": "Scripted", "modelId": "scripted"}), &task)
	out := t.TempDir()
	ct, body := sdkMultipart([][2]string{{"description", "Write the report [[sdk-run]]"}, {"providerName", "Scripted"}, {"modelId", "scripted"}, {"outputDirectory", out}},
		map[string]string{"brief.txt": "brief"})
	var run wire.Task
	json.Unmarshal(ok(201, "Task", "POST", "/api/v1/tasks", body, "Content-Type", ct), &run)
	if run.Status != "queued" || len(run.InputFiles) != 1 || run.InputFiles[0].MimeType == "" {
		t.Fatalf("multipart create = %+v", run)
	}
	done := h.waitTask(run.ID, "the end", terminal)
	if done.Status != "completed" || done.Duration == nil {
		t.Fatalf("run = %+v", done)
	}
	ok(200, "Task", "GET", "/api/v1/tasks/"+run.ID, nil)
	ok(200, "TaskFiles", "GET", "/api/v1/tasks/"+run.ID+"/files", nil)
	if got := ok(200, "", "GET", "/api/v1/tasks/"+run.ID+"/files/report.txt?type=output", nil); string(got) != "done" {
		t.Fatalf("download = %q", got)
	}
	ok(200, "", "GET", "/api/v1/tasks/"+run.ID+"/files/brief.txt?type=input", nil)
	ok(200, "Activity", "GET", "/api/v1/tasks/"+run.ID+"/activity", nil)

	// tasks.list, with the SDK's parameters
	ok(200, "TaskList", "GET", "/api/v1/tasks?limit=50&offset=0&sort=createdAt&order=desc", nil)
	ok(200, "TaskList", "GET", "/api/v1/tasks?limit=10&offset=0&sort=completedAt&order=asc&status=completed,failed,timedOut", nil)

	// pause, resume, cancel, delete
	h.llm.Script("[[sdk-hold]]", llmtest.Turn{Delay: 400 * time.Millisecond, Msg: llmtest.Text("…").Msg, Repeat: true})
	var held wire.Task
	json.Unmarshal(ok(201, "Task", "POST", "/api/v1/tasks", map[string]any{"description": "Hold [[sdk-hold]]", "providerName": "Scripted", "modelId": "scripted"}), &held)
	h.waitTask(held.ID, "running", func(w wire.Task) bool { return w.Status == "running" })
	ok(200, "Task", "PATCH", "/api/v1/tasks/"+held.ID, map[string]any{"action": "pause"})
	h.waitTask(held.ID, "paused", func(w wire.Task) bool { return w.Status == "paused" })
	ok(200, "Task", "PATCH", "/api/v1/tasks/"+held.ID, map[string]any{"action": "resume", "instructions": "Go on"})
	ok(200, "Task", "PATCH", "/api/v1/tasks/"+held.ID, map[string]any{"action": "cancel"})
	h.waitTask(held.ID, "cancelled", func(w wire.Task) bool { return w.Status == "cancelled" })
	ok(204, "", "DELETE", "/api/v1/tasks/"+task.ID, nil)
	ok(404, "Error", "GET", "/api/v1/tasks/"+task.ID, nil)

	// schedules: create (one-time, recurring), list, get, update, run_now, delete
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano) // the SDK sends microseconds
	var once, daily wire.Schedule
	json.Unmarshal(ok(201, "Schedule", "POST", "/api/v1/schedules", map[string]any{"title": "Once", "description": "Once", "providerName": "Scripted",
		"modelId": "scripted", "schedule": map[string]any{"scheduledAt": at}}), &once)
	json.Unmarshal(ok(201, "Schedule", "POST", "/api/v1/schedules", map[string]any{"title": "Weekly", "description": "Weekly", "providerName": "Scripted",
		"modelId": "scripted", "schedule": map[string]any{"recurrence": map[string]any{"type": "weekly", "daysOfWeek": []int{2, 4}, "hour": 9, "minute": 30}}}), &daily)
	ok(200, "ScheduleList", "GET", "/api/v1/schedules?limit=50&offset=0", nil)
	ok(200, "Schedule", "GET", "/api/v1/schedules/"+once.ID, nil)
	later := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	var upd wire.Schedule
	json.Unmarshal(ok(200, "Schedule", "PATCH", "/api/v1/schedules/"+once.ID, map[string]any{"title": "Once!", "scheduledAt": later.Format(time.RFC3339), "isEnabled": true}), &upd)
	if upd.Title != "Once!" || upd.ScheduledAt == nil || !upd.ScheduledAt.Equal(later) {
		t.Fatalf("PATCH with a top-level scheduledAt = %+v", upd)
	}
	json.Unmarshal(ok(200, "Schedule", "PATCH", "/api/v1/schedules/"+daily.ID, map[string]any{"recurrence": map[string]any{"type": "daily", "hour": 7, "minute": 0}}), &upd)
	if upd.Recurrence == nil || upd.Recurrence.Type != "daily" || upd.Recurrence.Hour != 7 {
		t.Fatalf("PATCH with a top-level recurrence = %+v", upd)
	}
	ok(200, "Task", "POST", "/api/v1/schedules/"+daily.ID+"/run", nil)
	ok(204, "", "DELETE", "/api/v1/schedules/"+once.ID, nil)

	// The SDK's errors: each status it maps, in Swift's error shape.
	ok(400, "Error", "POST", "/api/v1/tasks", map[string]any{"description": ""})
	ok(404, "Error", "POST", "/api/v1/tasks", map[string]any{"description": "x", "providerName": "Nobody", "modelId": "m"})
	ok(409, "Error", "PATCH", "/api/v1/tasks/"+run.ID, map[string]any{"action": "pause"})
	ok(401, "Error", "GET", "/api/v1/tasks", nil, "Authorization", "Bearer nope")
	ok(400, "Error", "POST", "/api/v1/schedules", map[string]any{"description": "x", "providerName": "Scripted", "modelId": "scripted", "schedule": map[string]any{"scheduledAt": at}})
}

// TestSwiftShapedRequests sends what a Swift client, the Swift server's
// docs and curl send, which the SDK does not.
func TestSwiftShapedRequests(t *testing.T) {
	c := loadContract(t)
	h := startHelper(t, nil)
	h.addProvider()

	// Every documented field of Swift's CreateTaskRequest, typed (the
	// task continued must exist and be finished).
	var src wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "A task to continue"}), &src)
	h.waitTask(src.ID, "the end", terminal)
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "All fields", "providerName": "Scripted", "modelId": "scripted",
		"priority": "high", "planFirst": false, "reasoningEnabled": true, "reasoningEffort": "high", "mentionedSkillNames": []string{"pdf"},
		"referencedTaskIds": []string{}, "continuationSourceTaskId": src.ID, "contextPackId": "p", "contextSuggestionIds": []string{"s"},
		"contextModeOverrides": map[string]string{"s": "full"}, "contextInlineBlocks": []string{"b"}, "contextAttachmentPaths": []string{}}), &task)
	if task.ReasoningEffort == nil || *task.ReasoningEffort != "high" || task.ReasoningEnabled == nil || !*task.ReasoningEnabled {
		t.Fatalf("reasoning not kept: %+v", task)
	}
	if task.ContinuationSourceTaskID != src.ID {
		t.Fatalf("continuationSourceTaskId = %q, want %s", task.ContinuationSourceTaskID, src.ID)
	}
	// A known field with the wrong type is still a 400.
	for field, v := range map[string]any{"priority": 3, "reasoningEnabled": "true", "mentionedSkillNames": "pdf", "contextModeOverrides": []string{"x"}} {
		out := h.expect(400, "POST", "/api/v1/tasks", map[string]any{"description": "x", field: v})
		if !strings.Contains(string(out), field) {
			t.Errorf("%s of the wrong type: %s", field, out)
		}
		c.check(t, "Error", out)
	}
	// curl -d: a JSON body sent as a form.
	h.expect(201, "POST", "/api/v1/tasks", `{"description":"From curl","providerName":"Scripted","modelId":"scripted"}`, "Content-Type", "application/x-www-form-urlencoded")

	// The documented multipart schedule: fields, a schedule part, files.
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ct, body := sdkMultipart([][2]string{{"title", "Report"}, {"description", "Write it"}, {"providerName", "Scripted"}, {"modelId", "scripted"},
		{"reasoningEnabled", "true"}, {"schedule", `{"scheduledAt":"` + at + `"}`}}, map[string]string{"data.csv": "a,b"})
	var sc wire.Schedule
	out := h.expect(201, "POST", "/api/v1/schedules", body, "Content-Type", ct)
	c.check(t, "Schedule", out)
	json.Unmarshal(out, &sc)
	if sc.Title != "Report" || sc.InputFileCount != 1 || sc.ScheduleType != "one-time" || sc.ReasoningEnabled == nil || !*sc.ReasoningEnabled {
		t.Fatalf("multipart schedule = %+v", sc)
	}
	// Schedules are listed by next run, soonest first.
	soon := time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)
	h.expect(201, "POST", "/api/v1/schedules", map[string]any{"title": "Soon", "description": "Soon", "schedule": map[string]any{"scheduledAt": soon}})
	var list wire.ScheduleList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/schedules", nil), &list)
	if len(list.Schedules) != 2 || list.Schedules[0].Title != "Soon" {
		t.Fatalf("schedules are not by next run: %+v", list.Schedules)
	}

	// instruct and the plan actions take Swift's instructions field; with
	// no running agent or plan they are conflicts, not unknown actions.
	h.waitTask(task.ID, "the end", terminal)
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "instruct", "instructions": "Faster"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "edit_plan", "instructions": "1. Do it"})
	h.expect(409, "PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "discard_writeback"})

	// A batch: two targets, three tasks sharing one input, one batch id.
	p := h.unixProviders()
	ct, body = sdkMultipart([][2]string{{"description", "Compare"}, {"targets", fmt.Sprintf(`[{"providerId":%q,"modelId":"a","copyCount":2},{"providerId":%q,"modelId":"b"}]`, p, p)}},
		map[string]string{"in.txt": "x"})
	var batch wire.TaskBatch
	out = h.expect(201, "POST", "/api/v1/tasks/batch", body, "Content-Type", ct)
	c.check(t, "TaskBatch", out)
	json.Unmarshal(out, &batch)
	if len(batch.Tasks) != 3 || batch.Tasks[0].BatchID == "" || batch.Tasks[0].BatchID != batch.Tasks[2].BatchID ||
		batch.Tasks[0].ModelID != "a" || batch.Tasks[2].ModelID != "b" || len(batch.Tasks[1].InputFiles) != 1 {
		t.Fatalf("batch = %s", out)
	}
	// A batch is queued whole or not at all.
	before := h.taskCount()
	h.expect(400, "POST", "/api/v1/tasks/batch", map[string]any{"description": "x", "targets": []map[string]any{{"providerId": p, "modelId": "a"}, {"providerId": p, "modelId": "b", "copyCount": 9}}})
	h.expect(404, "POST", "/api/v1/tasks/batch", map[string]any{"description": "x", "targets": []map[string]any{{"providerId": p, "modelId": "a"}, {"providerId": "nobody", "modelId": "b"}}})
	if after := h.taskCount(); after != before {
		t.Fatalf("refused batches stored %d tasks", after-before)
	}
}

func (h *helper) unixProviders() string {
	var l wire.ProviderList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/providers", nil), &l)
	return l.Providers[0].ID
}

func (h *helper) taskCount() int64 {
	var l wire.TaskList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/tasks?limit=1", nil), &l)
	return l.Total
}

// iso8601 is what Foundation's .iso8601 date decoding accepts (an
// ISO8601DateFormatter with .withInternetDateTime): no fractional seconds.
var iso8601 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$`)

// swiftDate decodes a date as a Swift client does, failing where it fails.
type swiftDate time.Time

func (d *swiftDate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !iso8601.MatchString(s) {
		return fmt.Errorf("date %q: Foundation's .iso8601 decoding refuses it", s)
	}
	t, err := time.Parse(time.RFC3339, s)
	*d = swiftDate(t)
	return err
}

// swiftArray decodes a non-optional array as Swift's Codable does: absent
// or null fails.
type swiftArray[T any] struct {
	items []T
	set   bool
}

func (a *swiftArray[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return fmt.Errorf("null where Swift wants an array")
	}
	a.set = true
	return json.Unmarshal(b, &a.items)
}

// TestSwiftDecoderReadsOurTasks decodes our task JSON the way the Swift
// server's APITask is decoded: dates by .iso8601, the file arrays and
// title required.
func TestSwiftDecoderReadsOurTasks(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	var created wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Swift reads this"}), &created)
	h.waitTask(created.ID, "the end", terminal)
	raw := h.expect(200, "GET", "/api/v1/tasks/"+created.ID, nil)
	var task struct {
		Title       *string                 `json:"title"`
		CreatedAt   swiftDate               `json:"createdAt"`
		StartedAt   *swiftDate              `json:"startedAt"`
		CompletedAt *swiftDate              `json:"completedAt"`
		InputFiles  swiftArray[wire.File]   `json:"inputFiles"`
		OutputFiles swiftArray[wire.File]   `json:"outputFiles"`
		Duration    *int                    `json:"duration"`
		Question    *struct{ At swiftDate } `json:"pendingQuestion"`
	}
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatalf("a Swift client cannot decode our task: %v\n%s", err, raw)
	}
	if task.Title == nil || !task.InputFiles.set || !task.OutputFiles.set || task.StartedAt == nil || task.CompletedAt == nil || task.Duration == nil {
		t.Fatalf("fields Swift needs are missing: %s", raw)
	}
	// The decoder is strict: our old answers (nanoseconds, no arrays) fail.
	if err := json.Unmarshal([]byte(`{"title":"t","createdAt":"2026-11-25T10:00:00.123456789Z","inputFiles":[],"outputFiles":[]}`), &task); err == nil {
		t.Fatal("the Swift-shaped decoder takes fractional seconds")
	}
	if err := json.Unmarshal([]byte(`{"title":"t","createdAt":"2026-11-25T10:00:00Z","inputFiles":null,"outputFiles":[]}`), &task); err == nil {
		t.Fatal("the Swift-shaped decoder takes a null array")
	}
}

// TestCreateAnswersQueuedAndEarlyCancelIsCancelled: the race a client
// sees. The answer to POST /tasks says queued even when the dispatcher
// takes the task at once (the SDK's own test checks it); a cancel right
// after submitting ends the task cancelled whatever step it reached (VM
// lease, input copy), never failed. 50 runs each.
func TestCreateAnswersQueuedAndEarlyCancelIsCancelled(t *testing.T) {
	h := startHelper(t, func(c *daemon.Config) { c.MaxUploadBytes = 1 << 20 })
	h.addProvider()
	const runs = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ids []string
	for i := range runs {
		ct, body := sdkMultipart([][2]string{{"description", fmt.Sprintf("Race %d", i)}}, map[string]string{"in.txt": "x"})
		var task wire.Task
		json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct), &task)
		if task.Status != "queued" {
			t.Fatalf("run %d: POST /tasks answered %q, want queued", i, task.Status)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Cancel at once: the task is queued, waiting for a VM, or just
			// leased one and is copying its input.
			code, out := h.req("PATCH", "/api/v1/tasks/"+task.ID, map[string]any{"action": "cancel"})
			if code != http.StatusOK && code != http.StatusConflict { // 409: it already ended
				t.Errorf("cancel: %d %s", code, out)
			}
			mu.Lock()
			ids = append(ids, task.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	cancelled := 0
	for _, id := range ids {
		end := h.waitTask(id, "the end", terminal)
		switch end.Status {
		case "cancelled":
			cancelled++
		case "completed": // it finished before the cancel arrived
		default:
			t.Errorf("task %s ended %s (%s) after an early cancel", id, end.Status, end.StatusReason)
		}
	}
	if cancelled == 0 {
		t.Fatal("no cancel reached a task before it ended: the race was not exercised")
	}
	t.Logf("%d of %d tasks cancelled early, the rest had completed", cancelled, runs)
}
