package main

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/tmplarchive"
	"github.com/hivecrew/hivecrew/core/version"
	"github.com/hivecrew/hivecrew/tests/daemontest"
)

// writeArchive writes the archive of a small Linux template with guest
// agent v0.1.0 to file.
func writeArchive(t *testing.T, file string) {
	t.Helper()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "rootfs/usr/local/bin"), 0o755)
	os.WriteFile(filepath.Join(src, "rootfs/usr/local/bin/hivecrew-guestagent"), []byte("old agent"), 0o755)
	root, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := tmplarchive.Manifest{Name: "Team desk", OS: "linux", Kind: tmplarchive.KindRootFS, AgentVersion: "v0.1.0", AgentPath: "/usr/local/bin/hivecrew-guestagent"}
	if _, _, err := tmplarchive.Write(context.Background(), f, m, tmplarchive.Source{Root: root, Kind: tmplarchive.KindRootFS, GuestUID: -1}); err != nil {
		t.Fatal(err)
	}
}

// TestTemplatesExportImportUpdateAgent: import prints the new template and
// the update hint, ls flags its agent, a second import is a name clash, a
// hostile archive is refused with the reason, export writes a file that
// imports again (and refuses to replace a file without --force), and
// update-agent installs the helper's agent.
func TestTemplatesExportImportUpdateAgent(t *testing.T) {
	t.Parallel()
	agent := filepath.Join(t.TempDir(), "hivecrew-guestagent")
	os.WriteFile(agent, []byte("#!/bin/sh\necho hivecrew-guestagent "+version.Version+"\n"), 0o755)
	h := startHelperWith(t, daemontest.Start, func(c *daemon.Config) { c.GuestAgent = agent })
	dir := t.TempDir()
	archive := filepath.Join(dir, "desk.hivecrew-template")
	writeArchive(t, archive)

	r := h.ok("templates", "import", archive)
	if !strings.Contains(r.stdout, "Imported template team-desk (Team desk), guest agent v0.1.0 (outdated).") ||
		!strings.Contains(r.stdout, "hivecrew templates update-agent team-desk") {
		t.Errorf("import: %s", r)
	}
	if ls := h.ok("templates", "ls").stdout; !regexp.MustCompile(`(?m)^team-desk\s+Team desk\s+linux\s+rootfs.*v0\.1\.0 \(outdated\)`).MatchString(ls) {
		t.Errorf("ls:\n%s", ls)
	}
	if r := h.cli("templates", "import", archive); r.code != 1 || !strings.Contains(r.stderr, `a template named "Team desk" exists`) {
		t.Errorf("a name clash: %s", r)
	}

	var evil bytes.Buffer
	zw, _ := zstd.NewWriter(&evil)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "manifest.json", Linkname: "/etc/passwd"})
	tw.Close()
	zw.Close()
	os.WriteFile(filepath.Join(dir, "evil"), evil.Bytes(), 0o644)
	if r := h.cli("templates", "import", filepath.Join(dir, "evil")); r.code != 1 || !strings.Contains(r.stderr, "is a symbolic link") {
		t.Errorf("a hostile archive: %s", r)
	}

	out := filepath.Join(dir, "out.hivecrew-template")
	if r := h.ok("templates", "export", "Team desk", out); !strings.Contains(r.stdout, "Exported template team-desk to "+out) {
		t.Errorf("export: %s", r)
	}
	if r := h.cli("templates", "export", "team-desk", out); r.code != 1 || !strings.Contains(r.stderr, "exists (--force replaces it)") {
		t.Errorf("export over a file: %s", r)
	}
	if r := h.ok("templates", "import", out, "--name", "Copy"); !strings.Contains(r.stdout, "Imported template copy (Copy)") {
		t.Errorf("import of the export: %s", r)
	}
	if r := h.cli("templates", "export", "nope", filepath.Join(dir, "x")); r.code != 1 || !strings.Contains(r.stderr, `no template "nope"`) {
		t.Errorf("export of an unknown template: %s", r)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(ents) != 0 {
		t.Errorf("partial downloads left: %v", ents)
	}

	if r := h.ok("templates", "update-agent", "team-desk"); !strings.Contains(r.stdout, "Template team-desk now has guest agent "+version.Version) {
		t.Errorf("update-agent: %s", r)
	}
	home := h.home
	if b, _ := os.ReadFile(filepath.Join(home, "Templates/team-desk/rootfs/usr/local/bin/hivecrew-guestagent")); !strings.Contains(string(b), "echo hivecrew-guestagent") {
		t.Errorf("the template's agent: %q", b)
	}
	if ls := h.ok("templates", "ls").stdout; strings.Contains(ls, "team-desk") && strings.Contains(regexp.MustCompile(`(?m)^team-desk.*$`).FindString(ls), "outdated") {
		t.Errorf("still outdated:\n%s", ls)
	}
}

// TestVMsOpenAndRm: vms open boots a developer VM of a template named by
// its name, vms ls shows it as one, vms rm removes it.
func TestVMsOpenAndRm(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	r := h.ok("vms", "open", "Host desktop")
	m := regexp.MustCompile(`Developer VM (\S+) of template host is running`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "hivecrew vms rm "+m[1]) {
		t.Fatalf("vms open: %s", r)
	}
	if ls := h.ok("vms", "ls").stdout; !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `\s+busy\s+developer VM\s+host`).MatchString(ls) {
		t.Errorf("vms ls:\n%s", ls)
	}
	if r := h.ok("vms", "rm", m[1]); !strings.Contains(r.stdout, "Removed VM "+m[1]) {
		t.Errorf("vms rm: %s", r)
	}
	if ls := h.ok("vms", "ls").stdout; strings.Contains(ls, m[1]) {
		t.Errorf("still listed:\n%s", ls)
	}
	if r := h.cli("vms", "open", "nope"); r.code != 1 || !strings.Contains(r.stderr, `no template "nope"`) {
		t.Errorf("vms open nope: %s", r)
	}
}
