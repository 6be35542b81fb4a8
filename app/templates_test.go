package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TestTemplatesCommands: the template subcommands edit, set the default,
// list manifests, refuse what this helper cannot build with the helper's
// words (exit 1) and bad flags as usage errors (exit 2), and delete.
func TestTemplatesCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	if r := h.ok("templates", "edit", "host", "--cpus", "1", "--memory", "1024"); !strings.Contains(r.stdout, "Template host: 1 CPUs, 1024 MB, disk - (for new VMs).") {
		t.Fatalf("edit: %s", r)
	}
	if r := h.cli("templates", "edit", "host"); r.code != 2 || !strings.Contains(r.stderr, "needs at least one of") {
		t.Errorf("edit without changes: %s", r)
	}
	if r := h.cli("templates", "edit", "host", "--cpus", "99"); r.code != 1 || !strings.Contains(r.stderr, "cpuCount must be") {
		t.Errorf("edit --cpus 99: %s", r)
	}
	if r := h.ok("templates", "default", "Host desktop"); !strings.Contains(r.stdout, "New tasks use template host (Host desktop).") {
		t.Errorf("default by name: %s", r)
	}
	ls := h.ok("templates", "ls").stdout
	if !regexp.MustCompile(`(?m)^host\s+Host desktop\s+linux\s+host\s+host programs, read-only \(weaker\)\s+ready\s+1\s+1024 MB\s+-\s+\S+\s+yes$`).MatchString(ls) {
		t.Errorf("templates ls:\n%s", ls)
	}
	if r := h.ok("templates", "manifests"); !regexp.MustCompile(`(?m)^linux-desktop\s+4\s+linux\s+--full --with libreoffice\s+yes`).MatchString(r.stdout) {
		t.Errorf("manifests:\n%s", r.stdout)
	}
	if r := h.cli("templates", "create", "macos-15-base"); r.code != 1 || !strings.Contains(r.stderr, "Apple silicon") {
		t.Errorf("create macos-15-base: %s", r)
	}
	if r := h.cli("templates", "create"); r.code != 2 {
		t.Errorf("create without a manifest: %s", r)
	}
	if r := h.cli("templates", "seal", "vm-nope"); r.code != 1 || !strings.Contains(r.stderr, "vm vm-nope not found") {
		t.Errorf("seal of an unknown VM: %s", r)
	}
	if r := h.cli("templates", "setup", "host"); r.code != 1 || !strings.Contains(r.stderr, "only macOS templates") {
		t.Errorf("setup of a Linux template: %s", r)
	}
	if r := h.cli("vms", "rebuild", "vm-nope"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("rebuild of an unknown VM: %s", r)
	}
	var tl wire.TemplateList
	decodeOne(t, h.ok("templates", "ls", "--json").stdout, &tl)
	if len(tl.Templates) != 1 || tl.Templates[0].Status != "ready" {
		t.Fatalf("templates ls --json: %+v", tl)
	}
	if r := h.ok("templates", "rm", "host"); !strings.Contains(r.stdout, "Deleted template host.") {
		t.Errorf("rm: %s", r)
	}
	if r := h.cli("templates", "rm", "host"); r.code != 1 || !strings.Contains(r.stderr, `no template "host"`) {
		t.Errorf("rm again: %s", r)
	}
	if r := h.ok("templates", "ls"); !strings.Contains(r.stdout, "No VM templates yet") {
		t.Errorf("ls after rm: %s", r)
	}
}

// TestProgressBar draws the build's progress within its width.
func TestProgressBar(t *testing.T) {
	if got := progressBar(&wire.TemplateProgress{Phase: "packages", Percent: 50}, 10); got != "[#####-----]  50% packages" {
		t.Errorf("progressBar = %q", got)
	}
	if got := progressBar(&wire.TemplateProgress{Phase: "done", Percent: 140}, 4); got != "[####] 140% done" {
		t.Errorf("progressBar over 100 = %q", got)
	}
}
