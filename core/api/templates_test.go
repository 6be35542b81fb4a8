package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestTemplateRoutes covers the template extensions over TCP: manifests,
// build and seal requests and their errors, edits, the default, delete
// (refused while a task's VM uses the template), the VM rebuild and the
// guest-agent version check.
func TestTemplateRoutes(t *testing.T) {
	h := startHelper(t, nil)
	var ms wire.ManifestList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/templates/manifests", nil), &ms)
	if len(ms.Manifests) != 2 || ms.Manifests[0].Name != "linux-desktop" || !ms.Manifests[0].Supported || ms.Manifests[1].Supported ||
		strings.Join(ms.Manifests[0].Extras, ",") != "libreoffice" {
		t.Fatalf("manifests = %+v", ms)
	}
	h.expect(400, "POST", "/api/v1/templates", map[string]any{})
	h.expect(400, "POST", "/api/v1/templates", map[string]any{"manifest": "linux-desktop", "fromVmId": "vm-x"})
	h.expect(400, "POST", "/api/v1/templates", map[string]any{"fromVmId": "vm-x", "full": true})
	h.expect(400, "POST", "/api/v1/templates", map[string]any{"manifest": "linux-desktop", "with": []string{"games"}})
	// A misspelt field is refused, naming the field meant.
	if out := h.expect(400, "POST", "/api/v1/templates", map[string]any{"manifst": "linux-desktop"}); !strings.Contains(string(out), `did you mean \"manifest\"`) {
		t.Errorf("misspelt manifest: %s", out)
	}
	h.expect(404, "POST", "/api/v1/templates", map[string]any{"manifest": "nope"})
	h.expect(404, "POST", "/api/v1/templates", map[string]any{"fromVmId": "vm-nope"})
	if out := h.expect(501, "POST", "/api/v1/templates", map[string]any{"manifest": "macos-15-base"}); !strings.Contains(string(out), "Apple silicon") {
		t.Errorf("macOS on Linux: %s", out)
	}

	// The warm VM: the fake guest's agent ("fake") is not the helper's.
	var vms wire.VMList
	deadline := time.Now().Add(10 * time.Second)
	for len(vms.VMs) == 0 || vms.VMs[0].State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("no warm VM: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
		json.Unmarshal(h.expect(200, "GET", "/api/v1/vms", nil), &vms)
	}
	warm := vms.VMs[0]
	if warm.AgentVersion != "fake" || !warm.AgentOutdated {
		t.Errorf("warm VM agent: %+v", warm)
	}
	// A host template has no agent of its own: never outdated.
	var tm wire.Template
	json.Unmarshal(h.expect(200, "GET", "/api/v1/templates/host", nil), &tm)
	if tm.Status != "ready" || tm.AgentOutdated || !tm.IsDefault {
		t.Errorf("host template: %+v", tm)
	}
	// Host-template VMs have no disk of their own to seal.
	if out := h.expect(501, "POST", "/api/v1/templates", map[string]any{"fromVmId": warm.ID}); !strings.Contains(string(out), "no disk of its own") {
		t.Errorf("seal of a host VM: %s", out)
	}
	// Rebuild an idle VM: it goes, a fresh one comes.
	h.expect(202, "POST", "/api/v1/vms/"+warm.ID+"/rebuild", nil)
	h.expect(404, "POST", "/api/v1/vms/"+warm.ID+"/rebuild", nil)

	// Edits.
	json.Unmarshal(h.expect(200, "PATCH", "/api/v1/templates/host", map[string]any{"cpuCount": 1, "memoryMB": 1024, "description": "Edited"}), &tm)
	if tm.CPUCount != 1 || tm.MemoryMB != 1024 || tm.Description != "Edited" {
		t.Errorf("after edit: %+v", tm)
	}
	h.expect(400, "PATCH", "/api/v1/templates/host", map[string]any{"cpuCount": 99})
	h.expect(400, "PATCH", "/api/v1/templates/host", map[string]any{"name": " "})
	h.expect(404, "PATCH", "/api/v1/templates/nope", map[string]any{"cpuCount": 1})
	json.Unmarshal(h.expect(200, "POST", "/api/v1/templates/host/default", nil), &tm)
	var s struct {
		DefaultTemplateID string `json:"defaultTemplateId"`
	}
	json.Unmarshal(h.expect(200, "GET", "/api/v1/settings", nil), &s)
	if !tm.IsDefault || s.DefaultTemplateID != "host" {
		t.Errorf("default: %+v, setting %q", tm, s.DefaultTemplateID)
	}
	h.expect(404, "GET", "/api/v1/templates/host/log", nil)

	// A task's VM uses the template: neither delete nor rebuild.
	h.addProvider()
	hold := make(chan struct{})
	h.llm.Script("[[hold]]", llmtest.Turn{Hold: hold, Msg: llmtest.Text("Done.").Msg}, llmtest.Verdict(true, "ok"))
	var task wire.Task
	json.Unmarshal(h.expect(201, "POST", "/api/v1/tasks", map[string]any{"description": "Wait [[hold]]", "providerName": "Scripted", "modelId": "scripted"}), &task)
	running := h.waitTask(task.ID, "running", func(x wire.Task) bool { return x.Status == "running" })
	json.Unmarshal(h.expect(200, "GET", "/api/v1/vms", nil), &vms)
	for _, v := range vms.VMs {
		if v.ID == running.VMID && (v.CPUCount != 1 || v.MemoryMB != 1024) {
			t.Errorf("the edited template's VM has %d CPUs and %d MB", v.CPUCount, v.MemoryMB)
		}
	}
	if out := h.expect(409, "DELETE", "/api/v1/templates/host", nil); !strings.Contains(string(out), running.VMID) {
		t.Errorf("delete in use: %s", out)
	}
	h.expect(409, "POST", "/api/v1/vms/"+running.VMID+"/rebuild", nil)
	close(hold)
	h.waitTask(task.ID, "the end", terminal)
	h.expect(204, "DELETE", "/api/v1/templates/host", nil)
	h.expect(404, "DELETE", "/api/v1/templates/host", nil)
	var ts wire.TemplateList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/templates", nil), &ts)
	json.Unmarshal(h.expect(200, "GET", "/api/v1/settings", nil), &s)
	if len(ts.Templates) != 0 || ts.DefaultTemplateID != "" || s.DefaultTemplateID != "" {
		t.Errorf("after delete: %+v, setting %q", ts, s.DefaultTemplateID)
	}
}
