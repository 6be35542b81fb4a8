package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestPresets: a preset is saved (JSON, or multipart with files), listed,
// renamed, launched (201 with the task, its files copied, titled with the
// preset's name) and deleted (its launched tasks stay); every bad body is a
// 400 that names the field, a taken name a 409, an unknown preset a 404.
func TestPresets(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	ctx := context.Background()

	var p wire.Preset
	json.Unmarshal(h.expect(201, "POST", "/api/v1/presets", map[string]any{
		"name": " Inbox sweep ", "task": map[string]any{"description": "Sort the inbox", "timeoutMinutes": 15, "networkMode": "offline"}}), &p)
	if p.Name != "Inbox sweep" || p.Task.TimeoutMinutes != 15 || p.UseCount != 0 || p.InputFiles == nil {
		t.Fatalf("created = %+v", p)
	}
	// The answer's keys, exactly.
	var raw map[string]json.RawMessage
	json.Unmarshal(h.expect(200, "GET", "/api/v1/presets/"+p.ID, nil), &raw)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"createdAt", "id", "inputFiles", "name", "task", "updatedAt", "useCount"}; !slices.Equal(keys, want) {
		t.Fatalf("preset keys = %v, want %v", keys, want)
	}

	file := filepath.Join(t.TempDir(), "list.csv")
	os.WriteFile(file, []byte("a,b\n1,2\n"), 0o600)
	withFile, err := h.tcp().CreatePreset(ctx, wire.SavePreset{Name: "Tabulate", Task: &wire.CreateTask{Description: "Tabulate list.csv"}}, file)
	if err != nil || len(withFile.InputFiles) != 1 || withFile.InputFiles[0].Name != "list.csv" || withFile.InputFiles[0].Size != 8 {
		t.Fatalf("multipart preset = %+v, %v", withFile, err)
	}

	for name, c := range map[string]struct {
		body any
		code int
		want string
	}{
		"no name":        {map[string]any{"task": map[string]any{"description": "x"}}, 400, "name is required"},
		"no task":        {map[string]any{"name": "x"}, 400, "task is required"},
		"task and from":  {map[string]any{"name": "x", "task": map[string]any{"description": "x"}, "fromTaskId": "y"}, 400, "not both"},
		"task a string":  {map[string]any{"name": "x", "task": "Sort the inbox"}, 400, "task"},
		"name a number":  {map[string]any{"name": 7, "task": map[string]any{"description": "x"}}, 400, "name"},
		"bad limit":      {map[string]any{"name": "x", "task": map[string]any{"description": "x", "timeoutMinutes": -1}}, 400, "timeoutMinutes"},
		"no description": {map[string]any{"name": "x", "task": map[string]any{"timeoutMinutes": 5}}, 400, "description is required"},
		"continuation":   {map[string]any{"name": "x", "task": map[string]any{"description": "x", "continuationSourceTaskId": "y"}}, 400, "cannot continue"},
		"unknown task":   {map[string]any{"name": "x", "fromTaskId": "nope"}, 404, "fromTaskId"},
		"taken name":     {map[string]any{"name": "INBOX SWEEP", "task": map[string]any{"description": "x"}}, 409, "exists already"},
		"two-line name":  {map[string]any{"name": "a\nb", "task": map[string]any{"description": "x"}}, 400, "one line"},
	} {
		code, out := h.req("POST", "/api/v1/presets", c.body)
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %d %s; want %d with %q", name, code, out, c.code, c.want)
		}
	}

	// Launch, by name, with extra instructions for this run.
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/presets/tabulate/run", map[string]any{"extraInstructions": "Sum column b."}), &task)
	if task.Title != "Tabulate" || !strings.HasSuffix(task.Description, "\n\nSum column b.") || len(task.InputFiles) != 1 {
		t.Fatalf("launched = %+v", task)
	}
	json.Unmarshal(h.expect(201, "POST", "/api/v1/presets/"+withFile.ID+"/run", nil), &task)
	if task.Description != "Tabulate list.csv" {
		t.Fatalf("launched without a body = %+v", task)
	}
	h.expect(400, "POST", "/api/v1/presets/Tabulate/run", map[string]any{"extraInstructions": strings.Repeat("x", 9000)})
	h.expect(400, "POST", "/api/v1/presets/Tabulate/run", map[string]any{"extraInstructions": 3})
	h.expect(404, "POST", "/api/v1/presets/nope/run", nil)

	var list wire.PresetList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/presets", nil), &list)
	if len(list.Presets) != 2 || list.Presets[0].Name != "Tabulate" || list.Presets[0].UseCount != 2 || list.Presets[0].LastUsedAt == nil {
		t.Fatalf("list (the used one first) = %+v", list)
	}
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/presets/"+p.ID, map[string]any{"name": "Inbox"}), &p)
	if p.Name != "Inbox" || p.Task.Description != "Sort the inbox" {
		t.Fatalf("renamed = %+v", p)
	}
	h.expect(409, "PATCH", "/api/v1/presets/"+p.ID, map[string]any{"name": "tabulate"})
	h.expect(400, "PATCH", "/api/v1/presets/"+p.ID, map[string]any{"task": map[string]any{"description": "x", "networkMode": "lan"}})
	h.expect(404, "PATCH", "/api/v1/presets/nope", map[string]any{"name": "y"})

	// Deleting a preset keeps the tasks it launched; its files go.
	h.expect(204, "DELETE", "/api/v1/presets/Tabulate", nil)
	h.expect(404, "DELETE", "/api/v1/presets/Tabulate", nil)
	h.waitTask(task.ID, "the launched task's end", terminal)
	h.expect(200, "GET", "/api/v1/tasks/"+task.ID, nil)
	if _, err := os.Stat(filepath.Join(h.paths.Home, "Presets", withFile.ID)); !os.IsNotExist(err) {
		t.Fatalf("a deleted preset's files: %v", err)
	}

	// A preset made from a task: its configuration and inputs.
	json.Unmarshal(h.expect(201, "POST", "/api/v1/presets", map[string]any{"name": "Again", "fromTaskId": task.ID}), &p)
	if p.Task.Description != "Tabulate list.csv" || len(p.InputFiles) != 1 || p.Task.ProviderName != "Scripted" {
		t.Fatalf("from a task = %+v", p)
	}
}

// TestUsage: GET /usage sums the tokens and cost of the tasks started
// since a time, per provider and model; a later since has none; a since
// that is not a time is a 400.
func TestUsage(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	h.llm.Script("Count the usage", llmtest.Done("Counted.")...)
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Count the usage"}), &task)
	done := h.waitTask(task.ID, "the task's end", terminal)
	if done.Status != "completed" {
		t.Fatalf("task = %+v", done)
	}
	var u wire.Usage
	json.Unmarshal(h.expect(200, "GET", "/api/v1/usage", nil), &u)
	// The scripted provider reports 1000 prompt and 20 completion tokens
	// a request.
	if len(u.Models) != 1 || u.Models[0].ProviderName != "Scripted" || u.Models[0].ModelID != "scripted" || u.Models[0].Tasks != 1 ||
		u.Models[0].PromptTokens == 0 || u.Models[0].PromptTokens%1000 != 0 || u.Models[0].TotalTokens != u.Models[0].PromptTokens+u.Models[0].CompletionTokens ||
		u.Total.TotalTokens != u.Models[0].TotalTokens || u.Total.Tasks != 1 {
		t.Fatalf("usage = %+v", u)
	}
	later := time.Now().Add(time.Hour).Format(time.RFC3339)
	json.Unmarshal(h.expect(200, "GET", "/api/v1/usage?since="+url.QueryEscape(later), nil), &u)
	if len(u.Models) != 0 || u.Total.Tasks != 0 || u.Models == nil {
		t.Fatalf("usage since an hour from now = %+v", u)
	}
	h.expect(400, "GET", "/api/v1/usage?since=yesterday", nil)
}
