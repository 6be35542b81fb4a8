package templates

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShareUpdateAgentAndDeveloperVM: the built linux-desktop template is
// exported with the CLI and imported into a newer helper (a real Debian
// root filesystem through the archive, owners and all), which flags its
// guest agent as outdated; update-agent installs the newer agent into it,
// and a developer VM of it, booted in a real sandbox with no agent loop,
// says the newer version in its hello; vms rm removes it.
func TestShareUpdateAgentAndDeveloperVM(t *testing.T) {
	src := shared.get(t)
	archive := filepath.Join(t.TempDir(), "desktop.hivecrew-template")
	start := time.Now()
	out := src.mustCLI(t, "templates", "export", "linux-desktop", archive)
	if !strings.Contains(out, "Exported template linux-desktop to "+archive) {
		t.Fatalf("export printed %q", out)
	}
	fi, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exported %d MB in %s", fi.Size()>>20, time.Since(start).Round(time.Second))

	h := startHelper(t, newHome(t), newerBin, "--guest-agent", filepath.Join(newerBin, "hivecrew-guestagent"))
	start = time.Now()
	out = h.mustCLI(t, "templates", "import", archive, "--name", "Shared desktop")
	t.Logf("imported in %s", time.Since(start).Round(time.Second))
	if !strings.Contains(out, "Imported template shared-desktop (Shared desktop), guest agent "+version+" (outdated).") {
		t.Fatalf("import printed %q", out)
	}
	rootfs := filepath.Join(h.Home, "Templates", "shared-desktop", "rootfs")
	for _, rel := range []string{"usr/bin/python3", "etc/os-release", "usr/local/bin/hivecrew-guestagent"} {
		if _, err := os.Stat(filepath.Join(rootfs, rel)); err != nil {
			t.Errorf("the imported root filesystem lacks %s: %v", rel, err)
		}
	}
	if ls := h.mustCLI(t, "templates", "ls"); !regexp.MustCompile(`(?m)^shared-desktop\s.*` + regexp.QuoteMeta(version) + ` \(outdated\)`).MatchString(ls) {
		t.Errorf("templates ls:\n%s", ls)
	}

	out = h.mustCLI(t, "templates", "update-agent", "Shared desktop")
	if !strings.Contains(out, "Template shared-desktop now has guest agent "+newerVersion) {
		t.Fatalf("update-agent printed %q", out)
	}
	record, _ := os.ReadFile(filepath.Join(rootfs, "etc/hivecrew-template.json"))
	if !strings.Contains(string(record), `"agentVersion": "`+newerVersion+`"`) {
		t.Errorf("the guest's record: %s", record)
	}

	out = h.mustCLI(t, "vms", "open", "shared-desktop")
	m := regexp.MustCompile(`Developer VM (\S+) of template shared-desktop is running`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("vms open printed %q", out)
	}
	id := m[1]
	v, ok := h.vm(t, id)
	if !ok || !v.Developer || v.State != "busy" || v.TaskID != "" || v.AgentVersion != newerVersion || v.AgentOutdated {
		t.Fatalf("the developer VM: %+v (%v)", v, ok)
	}
	if ls := h.mustCLI(t, "vms", "ls"); !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s+busy\s+developer VM\s+shared-desktop`).MatchString(ls) {
		t.Errorf("vms ls:\n%s", ls)
	}
	h.mustCLI(t, "vms", "rm", id)
	if _, ok := h.vm(t, id); ok {
		t.Errorf("%s is still listed after vms rm", id)
	}
}
