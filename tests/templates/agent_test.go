package templates

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestOutdatedAgentIsFlaggedAndVMsRebuild: after the helper is upgraded,
// the templates built with the older guest agent and the VMs whose agent
// said an older version in hello are flagged (API and CLI); an idle VM is
// rebuilt from its template (a fresh clone replaces it) while a VM that
// serves a task is not.
func TestOutdatedAgentIsFlaggedAndVMsRebuild(t *testing.T) {
	shared.get(t) // a built linux-desktop root filesystem
	home := newHome(t)
	ctx := context.Background()
	// A helper of this version with a template built by it: the shared
	// helper's linux-desktop root filesystem, registered here.
	h := startHelper(t, home, "")
	h.stop()
	st := openStore(t, home)
	if err := st.CreateTemplate(ctx, store.Template{ID: "desktop", Name: "Desktop", OS: "linux", Kind: "rootfs", Status: store.TemplateReady,
		Path: filepath.Join(shared.home, "Templates", "linux-desktop", "rootfs"), AgentVersion: version, Manifest: "linux-desktop", ManifestVersion: 4}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// The upgraded helper still runs the old guest agent.
	h = startHelper(t, home, newerBin, "--guest-agent", filepath.Join(bin, "hivecrew-guestagent"))
	h.Settings(t, map[string]any{"defaultTemplateId": "desktop", "warmPoolSize": 1, "networkMode": "offline"})
	warm := waitVM(t, h, "a warm VM of the template", func(v wire.VM) bool { return v.TemplateID == "desktop" && v.State == "ready" })
	if warm.AgentVersion != version || !warm.AgentOutdated {
		t.Fatalf("VM with agent %s under helper %s: %+v", version, newerVersion, warm)
	}
	if ls := h.mustCLI(t, "vms", "ls"); !regexp.MustCompile(`(?m)^` + warm.ID + `\s+ready\s+-\s+desktop\s+.*` + regexp.QuoteMeta(version) + ` \(outdated\)`).MatchString(ls) {
		t.Errorf("vms ls does not flag the VM:\n%s", ls)
	}
	var l wire.TemplateList
	if err := json.Unmarshal([]byte(h.mustCLI(t, "templates", "ls", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	for _, tm := range l.Templates {
		if want := tm.ID == "desktop"; tm.AgentOutdated != want {
			t.Errorf("template %s (agent %s) outdated = %v, want %v", tm.ID, tm.AgentVersion, tm.AgentOutdated, want)
		}
	}
	if ls := h.mustCLI(t, "templates", "ls"); !strings.Contains(ls, version+" (outdated)") {
		t.Errorf("templates ls does not flag the template:\n%s", ls)
	}

	// Rebuild: the idle VM is replaced by a fresh clone.
	out := h.mustCLI(t, "vms", "rebuild", warm.ID)
	if !strings.Contains(out, "VM "+warm.ID+" removed") {
		t.Errorf("vms rebuild printed %q", out)
	}
	fresh := waitVM(t, h, "the rebuilt VM", func(v wire.VM) bool { return v.TemplateID == "desktop" && v.State == "ready" && v.ID != warm.ID })
	if _, ok := h.vm(t, warm.ID); ok {
		t.Errorf("the rebuilt VM %s is still there (fresh one: %s)", warm.ID, fresh.ID)
	}

	// A VM that serves a task is not rebuilt under it.
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	hold := make(chan struct{})
	defer close(hold)
	llm.Script("[[busy]]", llmtest.Turn{Hold: hold, Msg: llmtest.Text("Done.").Msg})
	task := h.task(t, p, "desktop", "Wait [[busy]]")
	running := h.WaitTask(t, task.ID, "the task to run", 2*time.Minute, func(x wire.Task) bool { return x.Status == "running" || ended(x) })
	if _, errOut, err := h.cli("vms", "rebuild", running.VMID); err == nil || !strings.Contains(errOut, "serves task "+task.ID) {
		t.Errorf("rebuild of a busy VM: %v %s", err, errOut)
	}
	if v, ok := h.vm(t, running.VMID); !ok || v.State != "busy" {
		t.Errorf("the busy VM after a refused rebuild: %+v %v", v, ok)
	}
}

// waitVM waits for a VM that ok accepts.
func waitVM(t *testing.T, h *helper, what string, ok func(wire.VM) bool) wire.VM {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		vms, err := h.Unix.VMs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vms {
			if ok(v) {
				return v
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, vms)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
