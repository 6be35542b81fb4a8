package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// notDone is a script whose agent says it is done n times and whose
// completion check says each time that it is not.
func notDone(n int) []llmtest.Turn {
	var turns []llmtest.Turn
	for i := 1; i <= n; i++ {
		turns = append(turns, llmtest.Text("I think it is done."), llmtest.Verdict(false, fmt.Sprintf("Not done, check %d.", i)))
	}
	return turns
}

// TestCompletionCheckTries: Settings' completionCheckTries is how many
// completion checks in a row may say "not done" before the task fails
// (default 2), and it is bounded (1 to 10) with an error that says so.
func TestCompletionCheckTries(t *testing.T) {
	t.Parallel()
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()
	run := func(marker string) wire.Task {
		h.llm.Script(marker, notDone(5)...)
		var task wire.Task
		json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Do it " + marker}), &task)
		return h.waitTask(task.ID, "the end", terminal)
	}
	if done := run("[[tries-default]]"); done.Status != "failed" || *done.ResultSummary != "Not done, check 2." {
		t.Fatalf("default tries: %s %v; want failed after the second check", done.Status, *done.ResultSummary)
	}
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"completionCheckTries": 4}); err != nil {
		t.Fatal(err)
	}
	if done := run("[[tries-4]]"); done.Status != "failed" || *done.ResultSummary != "Not done, check 4." {
		t.Fatalf("4 tries: %s %v; want failed after the fourth check", done.Status, *done.ResultSummary)
	}
	for _, bad := range []any{0, 11, "3"} {
		out := h.expect(400, "PATCH", "/api/v1/settings", map[string]any{"completionCheckTries": bad})
		if !strings.Contains(string(out), "completionCheckTries") {
			t.Errorf("completionCheckTries %v: %s does not name the setting", bad, out)
		}
	}
	if out := h.expect(400, "PATCH", "/api/v1/settings", map[string]any{"completionCheckTries": 11}); !strings.Contains(string(out), "between 1 and 10") {
		t.Errorf("the refusal does not give the bounds: %s", out)
	}
	if s, _ := h.unix.Settings(ctx); s.CompletionCheckTries != 4 {
		t.Fatalf("a refused value changed the setting: %d", s.CompletionCheckTries)
	}
}

// TestUploadLimitSetting: Settings' maxUploadMB caps a request with files
// (413 naming the limit and the setting), is bounded, and a raised limit
// takes the same upload.
func TestUploadLimitSetting(t *testing.T) {
	t.Parallel()
	h := startHelper(t, nil)
	h.addProvider()
	if s, _ := h.unix.Settings(context.Background()); s.MaxUploadMB != 512 {
		t.Fatalf("default maxUploadMB = %d, want 512", s.MaxUploadMB)
	}
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"maxUploadMB": 1})
	big := strings.Repeat("x", 1<<20+10)
	ct, body := multipartTask(map[string]string{"description": "Read it"}, map[string]string{"big.txt": big})
	out := h.expect(413, "POST", "/api/v1/tasks", body, "Content-Type", ct)
	if !strings.Contains(string(out), "upload limit of 1 MB (Settings: maxUploadMB)") {
		t.Fatalf("413 body %s does not name the limit", out)
	}
	if list, _ := h.unix.ListTasks(context.Background(), client.TaskQuery{}); len(list.Tasks) != 0 {
		t.Fatalf("a refused upload left tasks: %+v", list.Tasks)
	}
	for _, bad := range []int{0, 10241} {
		if out := h.expect(400, "PATCH", "/api/v1/settings", map[string]any{"maxUploadMB": bad}); !strings.Contains(string(out), "maxUploadMB must be between 1 and 10240") {
			t.Errorf("maxUploadMB %d: %s", bad, out)
		}
	}
	h.expect(200, "PATCH", "/api/v1/settings", map[string]any{"maxUploadMB": 2})
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", body, "Content-Type", ct), &task)
	if len(task.InputFiles) != 1 || task.InputFiles[0].Size != int64(len(big)) {
		t.Fatalf("under the raised limit: %+v", task.InputFiles)
	}
}
