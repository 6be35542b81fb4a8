package template

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// addRootFS registers a ready Linux template whose rootfs holds an old
// guest agent, a guest record and a file of the guest's.
func (e *env) addRootFS(t *testing.T, id, name string) store.Template {
	t.Helper()
	tm := e.add(t, store.Template{ID: id, Name: name, OS: "linux", Kind: "rootfs", Status: store.TemplateReady,
		AgentVersion: "v1.0.0", Manifest: "linux-desktop", ManifestVersion: 1, Version: 1, CPUCount: 2, MemoryMB: 2048})
	r := filepath.Join(e.m.dir(id), "rootfs")
	for rel, data := range map[string]string{
		"usr/local/bin/hivecrew-guestagent": "#!/bin/sh\necho hivecrew-guestagent v1.0.0\n",
		"etc/hivecrew-template.json":        `{"manifest":"linux-desktop","agentVersion":"v1.0.0"}`,
		"home/guest/notes.txt":              "the guest's notes\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(r, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(r, rel), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/usr/local/bin/hivecrew-guestagent", filepath.Join(r, "usr/local/bin/agent-link"))
	return tm
}

// leftovers lists what the templates folder holds besides the templates'
// own folders.
func (e *env) leftovers(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(e.paths.Templates())
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := e.st.ListTemplates(context.Background())
	known := map[string]bool{}
	for _, tm := range ts {
		known[tm.ID] = true
	}
	var out []string
	for _, d := range ents {
		if !known[d.Name()] {
			out = append(out, d.Name())
		}
	}
	return out
}

// TestExportImportRoundTrip: an exported template imports under a new
// name as a ready template with the same files, resources and agent
// version; importing it again under its own name is a name clash that
// registers nothing and leaves nothing behind.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "desk", "Desk")
	var archive bytes.Buffer
	man, err := e.m.Export(ctx, "desk", &archive)
	if err != nil {
		t.Fatal(err)
	}
	if man.Name != "Desk" || man.AgentVersion != "v1.0.0" || man.AgentPath != "/usr/local/bin/hivecrew-guestagent" || man.ExportedBy != "v9.9.9" {
		t.Fatalf("manifest %+v", man)
	}
	data := archive.Bytes()
	got, err := e.m.Import(ctx, ImportRequest{Archive: bytes.NewReader(data), Name: "Desk copy"})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "desk-copy" || got.Status != store.TemplateReady || got.Kind != "rootfs" || got.AgentVersion != "v1.0.0" || got.CPUCount != 2 ||
		got.MemoryMB != 2048 || got.Manifest != "linux-desktop" || got.Path != filepath.Join(e.paths.Templates(), "desk-copy", "rootfs") {
		t.Fatalf("imported %+v", got)
	}
	b, err := os.ReadFile(filepath.Join(got.Path, "home/guest/notes.txt"))
	if err != nil || string(b) != "the guest's notes\n" {
		t.Errorf("notes.txt: %q, %v", b, err)
	}
	if l, _ := os.Readlink(filepath.Join(got.Path, "usr/local/bin/agent-link")); l != "/usr/local/bin/hivecrew-guestagent" {
		t.Errorf("the guest's link: %q", l)
	}
	if info := e.m.readInfo(got.ID); info.AgentPath != "/usr/local/bin/hivecrew-guestagent" || info.ImportedFrom != "v9.9.9" {
		t.Errorf("template.json: %+v", info)
	}
	if e.changed == 0 {
		t.Error("the warm pool was not told of the new template")
	}

	_, err = e.m.Import(ctx, ImportRequest{Archive: bytes.NewReader(data)})
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), `a template named "Desk" exists`) {
		t.Fatalf("a name clash: %v", err)
	}
	if ts, _ := e.st.ListTemplates(ctx); len(ts) != 2 {
		t.Errorf("%d templates after a refused import, want 2", len(ts))
	}
	if l := e.leftovers(t); len(l) != 0 {
		t.Errorf("the templates folder holds %v", l)
	}
}

// TestExportAndUpdateExcludeEachOther: while an agent update writes a
// template, its export and its deletion are refused, and the other way.
func TestExportAndUpdateExcludeEachOther(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "desk", "Desk")
	release, err := e.m.use("desk", "an agent update")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := e.m.Export(ctx, "desk", &b); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "busy with an agent update") || b.Len() != 0 {
		t.Errorf("export during an update: %v (%d bytes)", err, b.Len())
	}
	if err := e.m.Delete(ctx, "desk"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("delete during an update: %v", err)
	}
	release()
	release, _ = e.m.use("desk", "an export")
	if _, err := e.m.UpdateAgent(ctx, "desk"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "busy with an export") {
		t.Errorf("update during an export: %v", err)
	}
	release()
	if _, err := e.m.Export(ctx, "desk", &b); err != nil {
		t.Errorf("export once free: %v", err)
	}
}

// zstdTar is a tar stream of entries, zstd-compressed.
func zstdTar(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := zstd.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		h := h
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// TestImportRefusesHostileArchives: an archive that climbs out, is
// damaged, truncated or of a kind this helper cannot run is refused with
// nothing registered and no staging folder left in the templates folder.
func TestImportRefusesHostileArchives(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "desk", "Desk")
	var good bytes.Buffer
	if _, err := e.m.Export(ctx, "desk", &good); err != nil {
		t.Fatal(err)
	}
	// A damaged archive: one byte of the guest's notes changed inside the
	// compressed stream, which stays a valid stream.
	// A decoder made for DecodeAll has no stream: one given a reader starts
	// decoding it at once and may hold every block decoder DecodeAll waits on.
	zr, _ := zstd.NewReader(nil)
	raw, err := zr.DecodeAll(good.Bytes(), nil)
	zr.Close()
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Replace(raw, []byte("the guest's notes"), []byte("the guest's notez"), 1)
	if bytes.Equal(flipped, raw) {
		t.Fatal("the notes are not in the archive")
	}
	zw0, _ := zstd.NewWriter(nil)
	damaged := zw0.EncodeAll(flipped, nil)
	zw0.Close()
	manifest, _ := json.Marshal(map[string]any{"format": 1, "name": "Evil", "os": "macos", "kind": "macos", "diskBytes": 10, "exportedAt": "2025-01-01T00:00:00Z"})
	macos := bytes.Buffer{}
	zw, _ := zstd.NewWriter(&macos)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json", Size: int64(len(manifest)), Mode: 0o644})
	tw.Write(manifest)
	tw.Close()
	zw.Close()
	victim := filepath.Join(e.paths.Home, "victim")
	for _, c := range []struct {
		name    string
		archive []byte
		class   error
		want    string
	}{
		{"dot-dot", zstdTar(t, tar.Header{Typeflag: tar.TypeReg, Name: "../victim", Size: 5, Mode: 0o644}), errdefs.ErrInvalid, "climbs out"},
		{"absolute", zstdTar(t, tar.Header{Typeflag: tar.TypeReg, Name: victim, Size: 5, Mode: 0o644}), errdefs.ErrInvalid, "absolute path"},
		{"symlink", zstdTar(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "manifest.json", Linkname: victim}), errdefs.ErrInvalid, "symbolic link"},
		{"damaged", damaged, errdefs.ErrInvalid, "checksum of disk.tar does not match"},
		{"truncated", good.Bytes()[:good.Len()-40], errdefs.ErrInvalid, "ends early"},
		{"macOS on Linux", macos.Bytes(), errdefs.ErrUnsupported, "Apple silicon"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.m.Import(ctx, ImportRequest{Archive: bytes.NewReader(c.archive), Name: "Imported"})
			if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %v saying %q", err, c.class, c.want)
			}
			if ts, _ := e.st.ListTemplates(ctx); len(ts) != 1 {
				t.Errorf("%d templates registered", len(ts))
			}
			if l := e.leftovers(t); len(l) != 0 {
				t.Errorf("the templates folder holds %v", l)
			}
			if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written", victim)
			}
		})
	}
}

// TestRecoverRemovesInterruptedImports: a staging folder a crash left is
// gone after Recover; a template's folder stays.
func TestRecoverRemovesInterruptedImports(t *testing.T) {
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "desk", "Desk")
	left := filepath.Join(e.paths.Templates(), importPrefix+"123.partial")
	os.MkdirAll(filepath.Join(left, "rootfs/etc"), 0o755)
	if err := e.m.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted import is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.m.dir("desk"), "rootfs/home/guest/notes.txt")); err != nil {
		t.Errorf("a template's files went: %v", err)
	}
}

// TestUpdateAgentLinux: the helper's agent replaces the template's old
// one (a hard link the template shares with its parent keeps the parent's
// contents), the guest's record and the template say the new version,
// the template's version goes up and it is no longer outdated; its warm
// VM was retired. A VM serving a task refuses the update.
func TestUpdateAgentLinux(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "parent", "Parent")
	e.addRootFS(t, "child", "Child")
	agentRel := "rootfs/usr/local/bin/hivecrew-guestagent"
	childAgent := filepath.Join(e.m.dir("child"), agentRel)
	os.Remove(childAgent)
	if err := os.Link(filepath.Join(e.m.dir("parent"), agentRel), childAgent); err != nil {
		t.Fatal(err)
	}
	if !e.m.Outdated("v1.0.0") {
		t.Fatal("v1.0.0 is not outdated against v9.9.9")
	}
	e.pool.vms = []pool.Info{{ID: "vm-busy", TemplateID: "child", State: pool.StateBusy, TaskID: "task-1"}}
	if _, err := e.m.UpdateAgent(ctx, "child"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "vm-busy (task-1)") {
		t.Fatalf("with a task running on it: %v", err)
	}
	if tm, _ := e.st.GetTemplate(ctx, "child"); tm.Status != store.TemplateReady || tm.AgentVersion != "v1.0.0" {
		t.Fatalf("a refused update changed the template: %+v", tm)
	}
	e.pool.vms = []pool.Info{{ID: "vm-warm", TemplateID: "child", State: pool.StateReady}, {ID: "vm-other", TemplateID: "parent", State: pool.StateReady}}
	got, err := e.m.UpdateAgent(ctx, "child")
	if err != nil {
		t.Fatal(err)
	}
	if got.AgentVersion != "v9.9.9" || got.Version != 2 || got.Status != store.TemplateReady || e.m.Outdated(got.AgentVersion) {
		t.Errorf("updated template %+v", got)
	}
	agent, _ := os.ReadFile(e.m.cfg.AgentBinary)
	if b, _ := os.ReadFile(childAgent); !bytes.Equal(b, agent) {
		t.Errorf("the child's agent is %q", b)
	}
	if fi, err := os.Stat(childAgent); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the child's agent: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.m.dir("parent"), agentRel)); !strings.Contains(string(b), "v1.0.0") {
		t.Errorf("the parent's agent changed through the hard link: %q", b)
	}
	var record map[string]any
	b, _ := os.ReadFile(filepath.Join(e.m.dir("child"), "rootfs", templateRecord))
	if json.Unmarshal(b, &record); record["agentVersion"] != "v9.9.9" || record["manifest"] != "linux-desktop" {
		t.Errorf("the guest's record: %s", b)
	}
	if info := e.m.readInfo("child"); info.AgentVersion != "v9.9.9" || info.AgentUpdated == nil {
		t.Errorf("template.json: %+v", info)
	}
	if len(e.pool.removed) != 1 || e.pool.removed[0] != "vm-warm" {
		t.Errorf("removed VMs %v, want the child's warm VM", e.pool.removed)
	}
}

// TestUpdateAgentStaysInItsRoot: an agent path whose folder the guest
// made a link to a host folder is written nowhere outside the template.
func TestUpdateAgentStaysInItsRoot(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "evil", "Evil")
	outside := t.TempDir()
	bin := filepath.Join(e.m.dir("evil"), "rootfs/usr/local/bin")
	os.RemoveAll(bin)
	if err := os.Symlink(outside, bin); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.UpdateAgent(ctx, "evil"); err == nil {
		t.Fatal("the update went through a link out of the template")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the folder outside gained %v", ents)
	}
	if tm, _ := e.st.GetTemplate(ctx, "evil"); tm.Status != store.TemplateReady || tm.AgentVersion != "v1.0.0" {
		t.Errorf("after a failed update: %+v", tm)
	}
}

// TestDeveloperVMKeepsItsTemplate: a template a developer VM runs on
// (busy, no task) is neither deleted nor updated under it, and the
// refusal says how to remove the VM.
func TestDeveloperVMKeepsItsTemplate(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.addRootFS(t, "desk", "Desk")
	e.pool.vms = []pool.Info{{ID: "vm-dev", TemplateID: "desk", State: pool.StateBusy}}
	if err := e.m.Delete(ctx, "desk"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "vm-dev (a developer VM)") ||
		!strings.Contains(err.Error(), "hivecrew vms rm") {
		t.Errorf("delete under a developer VM: %v", err)
	}
	if _, err := e.m.UpdateAgent(ctx, "desk"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "vm-dev (busy)") {
		t.Errorf("update under a developer VM: %v", err)
	}
	if len(e.pool.removed) != 0 {
		t.Errorf("the developer VM was removed: %v", e.pool.removed)
	}
}
