package api_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/tmplarchive"
	"github.com/hivecrew/hivecrew/core/version"
	"github.com/hivecrew/hivecrew/core/wire"
)

// sharedArchive is the archive of a small Linux template whose guest agent
// is v0.1.0.
func sharedArchive(t *testing.T) []byte {
	t.Helper()
	src := t.TempDir()
	for rel, data := range map[string]string{
		"rootfs/usr/local/bin/hivecrew-guestagent": "#!/bin/sh\necho hivecrew-guestagent v0.1.0\n",
		"rootfs/etc/os-release":                    "PRETTY_NAME=Debian\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(src, rel)), 0o755)
		os.WriteFile(filepath.Join(src, rel), []byte(data), 0o755)
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var b bytes.Buffer
	m := tmplarchive.Manifest{Name: "Shared desk", OS: "linux", Kind: tmplarchive.KindRootFS, AgentVersion: "v0.1.0",
		AgentPath: "/usr/local/bin/hivecrew-guestagent", MemoryMB: 2048}
	if _, _, err := tmplarchive.Write(context.Background(), &b, m, tmplarchive.Source{Root: root, Kind: tmplarchive.KindRootFS, GuestUID: -1}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTemplateExportImportUpdateAgent: a template archive imports over
// the API (201, ready, its agent outdated), a second import of the same
// name is a conflict and a hostile archive a 400 that leaves nothing; the
// export downloads an archive that reads back; Update agent installs the
// helper's agent into the template, which is then current.
func TestTemplateExportImportUpdateAgent(t *testing.T) {
	agent := filepath.Join(t.TempDir(), "hivecrew-guestagent")
	os.WriteFile(agent, []byte("#!/bin/sh\necho hivecrew-guestagent "+version.Version+"\n"), 0o755)
	h := startHelper(t, func(c *daemon.Config) { c.GuestAgent = agent })
	archive := sharedArchive(t)
	zstdType := []string{"Content-Type", "application/zstd"}

	var tm wire.Template
	json.Unmarshal(h.expect(201, "POST", "/api/v1/templates/import", archive, zstdType...), &tm)
	if tm.ID != "shared-desk" || tm.Name != "Shared desk" || tm.Status != "ready" || tm.Kind != "rootfs" || tm.AgentVersion != "v0.1.0" ||
		!tm.AgentOutdated || tm.MemoryMB != 2048 {
		t.Fatalf("imported: %+v", tm)
	}
	if out := h.expect(409, "POST", "/api/v1/templates/import", archive, zstdType...); !strings.Contains(string(out), "exists") {
		t.Errorf("a name clash: %s", out)
	}
	json.Unmarshal(h.expect(201, "POST", "/api/v1/templates/import?name=Second+desk", archive, zstdType...), &tm)
	if tm.ID != "second-desk" {
		t.Errorf("imported under another name: %+v", tm)
	}

	var evil bytes.Buffer
	zw, _ := zstd.NewWriter(&evil)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../../escaped", Size: 3, Mode: 0o644})
	tw.Write([]byte("bad"))
	tw.Close()
	zw.Close()
	if out := h.expect(400, "POST", "/api/v1/templates/import", evil.Bytes(), zstdType...); !strings.Contains(string(out), "climbs out") {
		t.Errorf("a hostile archive: %s", out)
	}
	if out := h.expect(400, "POST", "/api/v1/templates/import", archive[:len(archive)/2], zstdType...); !strings.Contains(string(out), "ends early") {
		t.Errorf("a truncated archive: %s", out)
	}
	ents, _ := os.ReadDir(h.paths.Templates())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "second-desk shared-desk" {
		t.Errorf("the templates folder holds %v", names)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.paths.Home), "escaped")); err == nil {
		t.Error("the hostile archive wrote outside the templates folder")
	}

	code, body, hdr := h.reqHeader("GET", "/api/v1/templates/shared-desk/export", nil)
	if code != 200 || hdr.Get("Content-Type") != "application/zstd" || !strings.Contains(hdr.Get("Content-Disposition"), "shared-desk.hivecrew-template") {
		t.Fatalf("export: %d %v", code, hdr)
	}
	a, err := tmplarchive.Open(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if m := a.Manifest(); m.Name != "Shared desk" || m.AgentVersion != "v0.1.0" || m.AgentPath != "/usr/local/bin/hivecrew-guestagent" {
		t.Errorf("exported manifest %+v", m)
	}
	if err := a.Extract(context.Background(), tmplarchive.Target{Root: mustRoot(t, t.TempDir())}); err != nil {
		t.Errorf("the export does not read back: %v", err)
	}
	a.Close()
	h.expect(404, "GET", "/api/v1/templates/nope/export", nil)
	h.expect(501, "GET", "/api/v1/templates/host/export", nil)

	var updated wire.Template
	json.Unmarshal(h.expect(200, "POST", "/api/v1/templates/shared-desk/update-agent", nil), &updated)
	if tm = updated; tm.AgentVersion != version.Version || tm.AgentOutdated || tm.Status != "ready" {
		t.Errorf("after Update agent: %+v", tm)
	}
	installed, _ := os.ReadFile(filepath.Join(h.paths.Templates(), "shared-desk/rootfs/usr/local/bin/hivecrew-guestagent"))
	if want, _ := os.ReadFile(agent); !bytes.Equal(installed, want) {
		t.Errorf("the template's agent is %q", installed)
	}
	h.expect(501, "POST", "/api/v1/templates/host/update-agent", nil)
}

func mustRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
