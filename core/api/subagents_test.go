package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// The worker model in Settings: a provider that does not exist, or one
// half of the pair, is refused saying why; a provider's model is kept;
// both empty turn it off. A task's research subagent shows as such in
// GET /tasks/:id, the parent's subagents and the child's own fields.
func TestWorkerModelAndSubagentDomain(t *testing.T) {
	h := startHelper(t, nil)
	h.addProvider()
	for body, want := range map[string]string{
		`{"workerProviderName":"Nope","workerModelId":"small"}`:    "there is no such provider",
		`{"workerProviderName":"Scripted"}`:                        "go together",
		`{"workerProviderName":"Scripted","workerModelId":"a\nb"}`: "is not a model id",
	} {
		if out := h.expect(400, "PATCH", "/api/v1/settings", body); !strings.Contains(string(out), want) {
			t.Errorf("%s: %s; want %q", body, out, want)
		}
	}
	var s struct {
		Provider string `json:"workerProviderName"`
		Model    string `json:"workerModelId"`
	}
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/settings", `{"workerProviderName":"Scripted","workerModelId":"scripted-small"}`), &s)
	if s.Provider != "Scripted" || s.Model != "scripted-small" {
		t.Fatalf("worker %+v", s)
	}

	// The parent's requests hold the child's task too: the system prompt
	// tells them apart.
	h.llm.Match = func(body string) string {
		if strings.Contains(body, "You are a research subagent") {
			return "child"
		}
		return "parent"
	}
	h.llm.Script("child", llmtest.Done("Found it.")...)
	h.llm.Script("parent", append([]llmtest.Turn{
		llmtest.Tool("spawn_subagent", map[string]any{"task": "Look it up [[child]]", "domain": "host"}),
		llmtest.Tool("await_subagents", map[string]any{"timeoutSeconds": 30}),
	}, llmtest.Done("Done.")...)...)
	var parent wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Delegate [[parent]]"}), &parent)
	done := h.waitTask(parent.ID, "the parent's end", func(t wire.Task) bool { return t.Status == "completed" || t.Status == "failed" })
	if done.Status != "completed" || len(done.Subagents) != 1 || done.Subagents[0].Domain != "host" || done.SubagentDomain != "" {
		t.Fatalf("parent %s, subagents %+v, domain %q", done.Status, done.Subagents, done.SubagentDomain)
	}
	kid := h.waitTask(done.Subagents[0].ID, "the subagent", func(wire.Task) bool { return true })
	if kid.SubagentDomain != "host" || kid.ParentTaskID != parent.ID || kid.ModelID != "scripted-small" || kid.VMID != "" {
		t.Fatalf("subagent: domain %q, parent %q, model %q, VM %q", kid.SubagentDomain, kid.ParentTaskID, kid.ModelID, kid.VMID)
	}

	if all := strings.Join(h.llm.Requests("parent"), "\n"); !strings.Contains(all, "ended completed: Found it.") {
		t.Error("the parent's model never had the subagent's result")
	}
	for _, body := range h.llm.Requests("child") {
		if !strings.Contains(body, `"model":"scripted-small"`) {
			t.Fatal("a request of the subagent was not for the worker model")
		}
	}

	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/settings", `{"workerProviderName":"","workerModelId":""}`), &s)
	if s.Provider != "" || s.Model != "" {
		t.Fatalf("worker after turning it off: %+v", s)
	}
}
