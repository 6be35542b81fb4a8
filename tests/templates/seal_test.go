package templates

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// sealRunning runs a task on template whose agent runs command (output
// ends with the marker SEAL-READY) and then waits (its model holds the
// next answer); it seals the task's VM with the CLI into a template named
// name and returns it with what the command printed.
func sealRunning(t *testing.T, h *helper, llm *llmtest.Server, provider, template, marker, command, name string) (wire.Template, string) {
	t.Helper()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	llm.Script(marker,
		llmtest.Tool("run_shell", map[string]any{"command": command + `; echo SEAL-"READY"`}),
		llmtest.Turn{Hold: hold, Msg: llmtest.Text("never").Msg})
	task := h.task(t, provider, template, "Prepare the machine "+marker)
	running := h.WaitTask(t, task.ID, "the command to run", 2*time.Minute, func(x wire.Task) bool {
		return strings.Contains(told(llm, marker), "SEAL-READY") || ended(x)
	})
	if running.Status != "running" || running.VMID == "" {
		t.Fatalf("task is %s in %q: %v", running.Status, running.VMID, running.ResultSummary)
	}
	printed := between(told(llm, marker), "exitCode", "SEAL-READY")
	out := h.mustCLI(t, "templates", "seal", running.VMID, "--name", name)
	if !strings.Contains(out, "is ready") {
		t.Fatalf("templates seal printed:\n%s", out)
	}
	var l wire.TemplateList
	if err := json.Unmarshal([]byte(h.mustCLI(t, "templates", "ls", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	for _, tm := range l.Templates {
		if tm.Name != name {
			continue
		}
		if tm.Status != "ready" || tm.SourceVMID != running.VMID || tm.ParentID != template || tm.Kind != "rootfs" || tm.AgentVersion != version {
			t.Fatalf("sealed template: %+v", tm)
		}
		// The task lost its VM to the seal and says so.
		ended := h.WaitTask(t, task.ID, "the sealed VM's task to end", time.Minute, ended)
		if ended.Status != "failed" || !strings.Contains(*ended.ResultSummary, "sealed into template") {
			t.Errorf("the sealed VM's task ended %s: %v", ended.Status, *ended.ResultSummary)
		}
		if _, ok := h.vm(t, running.VMID); ok {
			t.Errorf("the sealed VM %s is still in the pool", running.VMID)
		}
		if _, err := os.Stat(filepath.Join(shared.home, "VMs", running.VMID)); !os.IsNotExist(err) {
			t.Errorf("the sealed VM's folder remains: %v", err)
		}
		return tm, printed
	}
	t.Fatalf("no template %q in %+v", name, l.Templates)
	return wire.Template{}, ""
}

// TestSealedTemplateKeepsTheVMsFiles: a file created in a VM appears in
// VMs created from the template sealed from it; sealing a VM of that
// template again keeps what that VM deleted deleted; the parent templates
// do not change, and files a VM did not change are hard links to the
// parent's (a sealed template costs only the changes).
func TestSealedTemplateKeepsTheVMsFiles(t *testing.T) {
	h := shared.get(t)
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	first, _ := sealRunning(t, h, llm, p, "linux-desktop", "[[seal-1]]",
		"echo sealed-marker > /opt/marker.txt && mkdir -p /opt/tool/bin && printf '#!/bin/sh\\necho tool-ran\\n' > /opt/tool/bin/tool && chmod 755 /opt/tool/bin/tool",
		"Desktop with marker")
	second, saw := sealRunning(t, h, llm, p, first.ID, "[[seal-2]]",
		"cat /opt/marker.txt; /opt/tool/bin/tool; rm /opt/marker.txt && echo second > /opt/second.txt", "Desktop without marker")
	if !strings.Contains(saw, "sealed-marker") || !strings.Contains(saw, "tool-ran") {
		t.Fatalf("a VM of the sealed template does not have the files its source created: %q", saw)
	}
	llm.Script("[[seal-use]]", append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": `echo SEE-"START"; ls -A /opt; echo SEE-"END"`}),
	}, llmtest.Done("Looked")...)...)
	use := h.task(t, p, second.ID, "Look at /opt [[seal-use]]")
	if done := h.WaitTask(t, use.ID, "the task on the second sealed template", 2*time.Minute, ended); done.Status != "completed" {
		t.Fatalf("task on the sealed template ended %s: %v", done.Status, *done.ResultSummary)
	}
	listed := between(told(llm, "[[seal-use]]"), "SEE-START", "SEE-END")
	if !strings.Contains(listed, "second.txt") || !strings.Contains(listed, "tool") || strings.Contains(listed, "marker.txt") {
		t.Errorf("the second sealed template's /opt lists %q: want second.txt and tool, not the deleted marker.txt", listed)
	}

	root := func(id string) string { return filepath.Join(shared.home, "Templates", id, "rootfs") }
	if _, err := os.Stat(filepath.Join(root("linux-desktop"), "opt", "marker.txt")); !os.IsNotExist(err) {
		t.Errorf("the parent template changed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root(first.ID), "opt", "marker.txt")); err != nil {
		t.Errorf("the first sealed template lost its marker: %v", err)
	}
	ino := func(p string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	for _, f := range []string{"usr/bin/Xvfb", "usr/local/bin/hivecrew-guestagent"} {
		if a, b, c := ino(filepath.Join(root("linux-desktop"), f)), ino(filepath.Join(root(first.ID), f)), ino(filepath.Join(root(second.ID), f)); a != b || b != c {
			t.Errorf("/%s was copied, not linked (inodes %d, %d, %d)", f, a, b, c)
		}
	}
	if a, b := ino(filepath.Join(root(first.ID), "opt/tool/bin/tool")), ino(filepath.Join(root(second.ID), "opt/tool/bin/tool")); a != b {
		t.Errorf("a file the second VM did not change was copied (inodes %d, %d)", a, b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root(first.ID), "opt/marker.txt"), &st); err != nil || st.Uid == 0 || st.Mode&0o777 != 0o644 {
		t.Errorf("/opt/marker.txt of the sealed template: %v (owner %d, mode %o)", err, st.Uid, st.Mode&0o777)
	}
}

// TestTemplateEditDefaultDelete: a template's resources apply to its new
// VMs; it can be made the default (tasks without a template use it);
// deleting it is refused while a VM runs a task on it and then removes
// it, its files and the default setting.
func TestTemplateEditDefaultDelete(t *testing.T) {
	h := shared.get(t)
	ctx := context.Background()
	llm := llmtest.New(t)
	p := h.provider(t, llm)
	tm, _ := sealRunning(t, h, llm, p, "linux-desktop", "[[edit-src]]", "echo edit > /opt/edit.txt", "Editable")

	out := h.mustCLI(t, "templates", "edit", tm.ID, "--cpus", "1", "--memory", "1024")
	if !strings.Contains(out, "1 CPUs, 1024 MB") {
		t.Fatalf("templates edit printed %q", out)
	}
	if _, errOut, err := h.cli("templates", "edit", tm.ID, "--memory", "100"); err == nil || !strings.Contains(errOut, "memoryMB must be") {
		t.Errorf("edit --memory 100: %v %s", err, errOut)
	}
	h.mustCLI(t, "templates", "default", "Editable") // by name
	defer h.Settings(t, map[string]any{"defaultTemplateId": "linux-desktop"})

	hold := make(chan struct{})
	llm.Script("[[edit-use]]", llmtest.Tool("run_shell", map[string]any{"command": `nproc; echo RUNNING-"USE"`}),
		llmtest.Turn{Hold: hold, Msg: llmtest.Text("Done.").Msg}, llmtest.Verdict(true, "Used it"))
	use := h.task(t, p, "", "Use the default template [[edit-use]]")
	running := h.WaitTask(t, use.ID, "the task on the default template", 2*time.Minute, func(x wire.Task) bool {
		return strings.Contains(told(llm, "[[edit-use]]"), "RUNNING-USE") || ended(x)
	})
	v, ok := h.vm(t, running.VMID)
	if !ok || v.TemplateID != tm.ID || v.CPUCount != 1 || v.MemoryMB != 1024 {
		close(hold)
		t.Fatalf("the default template's VM: %+v (found %v); want template %s with 1 CPU and 1024 MB", v, ok, tm.ID)
	}
	// In use: refused, and nothing is removed.
	_, errOut, err := h.cli("templates", "rm", tm.ID)
	if err == nil || !strings.Contains(errOut, "in use by "+running.VMID) {
		t.Errorf("rm of a template in use: %v %s", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(shared.home, "Templates", tm.ID, "rootfs", "opt", "edit.txt")); err != nil {
		t.Errorf("the refused delete removed files: %v", err)
	}
	close(hold)
	if done := h.WaitTask(t, use.ID, "the task to end", 2*time.Minute, ended); done.Status != "completed" {
		t.Fatalf("task ended %s: %v", done.Status, *done.ResultSummary)
	}
	h.mustCLI(t, "templates", "rm", tm.ID)
	if _, err := h.Unix.Template(ctx, tm.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deleted template still listed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(shared.home, "Templates", tm.ID)); !os.IsNotExist(err) {
		t.Errorf("deleted template's files remain: %v", err)
	}
	if s, err := h.Unix.Settings(ctx); err != nil || s.DefaultTemplateID != "" {
		t.Errorf("the default still names the deleted template: %q %v", s.DefaultTemplateID, err)
	}
}
