package template

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// fakePool is the pool as the manager sees it.
type fakePool struct {
	// mu guards everything below.
	mu       sync.Mutex
	vms      []pool.Info
	machines map[string]vm.Machine
	removed  []string
	// slots are the host slots held; full refuses new ones.
	slots map[string]bool
	full  bool
}

func (p *fakePool) ReserveSlot(ctx context.Context, what string, cpus, memMB int, onWait func(string)) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full {
		return nil, errdefs.Unavailablef("no VM slot")
	}
	if p.slots == nil {
		p.slots = map[string]bool{}
	}
	p.slots[what] = true
	return func() { p.mu.Lock(); delete(p.slots, what); p.mu.Unlock() }, nil
}

func (p *fakePool) heldSlots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}

func (p *fakePool) Snapshot() []pool.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.vms)
}

func (p *fakePool) Remove(ctx context.Context, id, reason string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.vms, func(v pool.Info) bool { return v.ID == id })
	if i < 0 {
		return errdefs.NotFoundf("vm %s not found", id)
	}
	p.vms = slices.Delete(p.vms, i, i+1)
	p.removed = append(p.removed, id)
	return nil
}

func (p *fakePool) Take(ctx context.Context, id, reason string, keep func(vm.Machine) error) error {
	p.mu.Lock()
	m := p.machines[id]
	p.mu.Unlock()
	if err := p.Remove(ctx, id, reason); err != nil {
		return err
	}
	if err := m.Stop(ctx); err != nil {
		return err
	}
	return keep(m)
}

type env struct {
	m       *Manager
	st      *store.Store
	pool    *fakePool
	paths   config.Paths
	backend *fake.Backend
	// mu guards settings and patches.
	mu       sync.Mutex
	settings config.Settings
	patches  []string
	changed  int
}

func newEnv(t *testing.T, kinds ...vm.TemplateKind) *env {
	t.Helper()
	home := t.TempDir()
	paths := config.Paths{Home: home}
	if err := paths.Ensure(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), paths.Database(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{st: st, pool: &fakePool{machines: map[string]vm.Machine{}}, paths: paths, backend: fake.New(fake.Options{}),
		settings: config.Defaults("linux", home)}
	agent := filepath.Join(home, "agent")
	os.WriteFile(agent, []byte("#!/bin/sh\necho hivecrew-guestagent v9.9.9\n"), 0o755)
	e.m, err = New(Config{Store: st, Paths: paths, Pool: e.pool, Kinds: kinds, GuestOS: "linux", Backend: e.backend,
		CacheDir: filepath.Join(home, "cache"), AgentBinary: agent, HostVersion: "v9.9.9", Log: slog.New(slog.DiscardHandler),
		Settings: func() config.Settings { e.mu.Lock(); defer e.mu.Unlock(); return e.settings },
		SaveSettings: func(ctx context.Context, patch []byte) (config.Settings, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			s, err := e.settings.Patch(patch)
			if err == nil {
				e.settings = s
				e.patches = append(e.patches, string(patch))
			}
			return s, err
		},
		Changed: func(context.Context) error { e.mu.Lock(); e.changed++; e.mu.Unlock(); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.m.Close() })
	return e
}

func (e *env) add(t *testing.T, tm store.Template) store.Template {
	t.Helper()
	if tm.Path == "" {
		tm.Path = templatePath(vm.TemplateKind(tm.Kind), e.m.dir(tm.ID))
	}
	if err := e.st.CreateTemplate(context.Background(), tm); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.m.dir(tm.ID), 0o755)
	return tm
}

// TestCreateRefusesWhatItCannotBuild: an unknown manifest, a kind the
// backend cannot run, an unknown optional set and a bad mirror are refused
// before anything is registered.
func TestCreateRefusesWhatItCannotBuild(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindHost) // a helper that cannot run rootfs templates
	if _, err := e.m.Create(ctx, CreateRequest{Manifest: "linux-desktop"}); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "as root") {
		t.Errorf("rootfs on a host-only backend: %v", err)
	}
	if _, err := e.m.Create(ctx, CreateRequest{Manifest: "macos-15-base"}); !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "Apple silicon") {
		t.Errorf("macOS on Linux: %v", err)
	}
	e = newEnv(t, vm.KindHost, vm.KindRootFS)
	for _, c := range []struct {
		req  CreateRequest
		want error
		msg  string
	}{
		{CreateRequest{Manifest: "nope"}, errdefs.ErrNotFound, "built in: linux-desktop"},
		{CreateRequest{Manifest: "relative/dir"}, errdefs.ErrInvalid, "manifest name"},
		{CreateRequest{Manifest: "linux-desktop", Options: Options{Extras: []string{"games"}}}, errdefs.ErrInvalid, `no optional set "games"`},
		{CreateRequest{Manifest: "linux-desktop", Mirror: "ftp://mirror"}, errdefs.ErrInvalid, "mirror"},
		{CreateRequest{Manifest: "linux-desktop", RestoreImage: "latest"}, errdefs.ErrInvalid, "restoreImage is for macOS"},
		{CreateRequest{Manifest: t.TempDir()}, errdefs.ErrNotFound, "has no template.yaml"},
	} {
		if _, err := e.m.Create(ctx, c.req); !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Create(%+v) = %v, want %v with %q", c.req, err, c.want, c.msg)
		}
	}
	if ts, _ := e.st.ListTemplates(ctx); len(ts) != 0 {
		t.Errorf("refused requests registered %d templates", len(ts))
	}
}

// TestRegisterPicksFreeIDsAndNames: ids are the manifest's name, then -2,
// -3…; a name the user gave that is taken is a conflict, a default one
// gets a number.
func TestRegisterPicksFreeIDsAndNames(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.add(t, store.Template{ID: "linux-desktop", Name: "Linux desktop (Debian 12)", OS: "linux", Kind: "rootfs"})
	os.MkdirAll(e.m.dir("linux-desktop-2"), 0o755) // a stray folder
	tm, err := e.m.register(ctx, store.Template{Name: "Linux desktop (Debian 12)", OS: "linux", Kind: "rootfs", Status: store.TemplateBuilding}, "linux-desktop", false)
	if err != nil {
		t.Fatal(err)
	}
	if tm.ID != "linux-desktop-3" || tm.Name != "Linux desktop (Debian 12) 2" || tm.Path != filepath.Join(e.paths.Templates(), "linux-desktop-3", "rootfs") {
		t.Errorf("registered %+v", tm)
	}
	if _, err := e.m.register(ctx, store.Template{Name: "Linux desktop (Debian 12)", OS: "linux", Kind: "rootfs"}, "x", true); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a taken name the user chose: %v", err)
	}
	if got := slug("  Sealed: VM #12 / Ünïcode  "); got != "sealed-vm-12-n-code" {
		t.Errorf("slug = %q", got)
	}
}

// TestUpdateDeleteDefault: edits are validated and retire the template's
// idle VMs; delete is refused while a task's VM uses the template, then
// removes its idle VMs, its record, its files and the default naming it;
// only a ready template can be the default.
func TestUpdateDeleteDefault(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	tm := e.add(t, store.Template{ID: "t1", Name: "One", OS: "linux", Kind: "rootfs", Status: store.TemplateReady})
	e.add(t, store.Template{ID: "t2", Name: "Two", OS: "linux", Kind: "rootfs", Status: store.TemplateBuilding})
	e.pool.vms = []pool.Info{{ID: "vm-warm", TemplateID: "t1", State: pool.StateReady}, {ID: "vm-busy", TemplateID: "t1", State: pool.StateBusy, TaskID: "task-1"},
		{ID: "vm-other", TemplateID: "host", State: pool.StateReady}}

	cpus, mem, bad, name := 1, 1024, 100, "Two"
	if _, err := e.m.Update(ctx, "t1", Patch{MemoryMB: &bad}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("memory 100: %v", err)
	}
	if _, err := e.m.Update(ctx, "t1", Patch{Name: &name}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a taken name: %v", err)
	}
	got, err := e.m.Update(ctx, "t1", Patch{CPUCount: &cpus, MemoryMB: &mem})
	if err != nil || got.CPUCount != 1 || got.MemoryMB != 1024 {
		t.Fatalf("update: %+v %v", got, err)
	}
	if !slices.Equal(e.pool.removed, []string{"vm-warm"}) {
		t.Errorf("retired %v, want the idle VM of t1 only", e.pool.removed)
	}

	if _, err := e.m.SetDefault(ctx, "t2"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("default of a building template: %v", err)
	}
	if _, err := e.m.SetDefault(ctx, "t1"); err != nil || e.settings.DefaultTemplateID != "t1" {
		t.Fatalf("default: %v %q", err, e.settings.DefaultTemplateID)
	}

	err = e.m.Delete(ctx, tm.ID)
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "vm-busy (task task-1)") {
		t.Fatalf("delete in use: %v", err)
	}
	if _, err := os.Stat(e.m.dir("t1")); err != nil {
		t.Fatalf("a refused delete removed files: %v", err)
	}
	e.pool.vms = []pool.Info{{ID: "vm-warm2", TemplateID: "t1", State: pool.StateReady}}
	if err := e.m.Delete(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.GetTemplate(ctx, "t1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("record after delete: %v", err)
	}
	if _, err := os.Stat(e.m.dir("t1")); !os.IsNotExist(err) {
		t.Errorf("files after delete: %v", err)
	}
	if !slices.Contains(e.pool.removed, "vm-warm2") || e.settings.DefaultTemplateID != "" {
		t.Errorf("after delete: removed %v, default %q", e.pool.removed, e.settings.DefaultTemplateID)
	}
	if err := e.m.Delete(ctx, "t1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// TestRebuildVM: an idle VM is removed (the warm pool boots a fresh
// clone); a VM serving a task, or one still booting, is not.
func TestRebuildVM(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.pool.vms = []pool.Info{{ID: "vm-idle", TemplateID: "t", State: pool.StateReady}, {ID: "vm-busy", TemplateID: "t", State: pool.StateBusy, TaskID: "task-9"},
		{ID: "vm-boot", TemplateID: "t", State: pool.StateBooting}}
	if err := e.m.RebuildVM(ctx, "vm-busy"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "serves task task-9") {
		t.Errorf("busy: %v", err)
	}
	if err := e.m.RebuildVM(ctx, "vm-boot"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("booting: %v", err)
	}
	if err := e.m.RebuildVM(ctx, "vm-nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if err := e.m.RebuildVM(ctx, "vm-idle"); err != nil || !slices.Equal(e.pool.removed, []string{"vm-idle"}) {
		t.Errorf("idle: %v, removed %v", err, e.pool.removed)
	}
}

// TestRecoverFailsInterruptedBuilds: a build the previous helper did not
// finish is marked failed, its partial files removed and its log kept.
func TestRecoverFailsInterruptedBuilds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindRootFS)
	e.add(t, store.Template{ID: "half", Name: "Half", OS: "linux", Kind: "rootfs", Status: store.TemplateBuilding})
	e.add(t, store.Template{ID: "done", Name: "Done", OS: "linux", Kind: "rootfs", Status: store.TemplateReady})
	os.MkdirAll(filepath.Join(e.m.dir("half"), "rootfs.partial", "usr"), 0o755)
	os.WriteFile(filepath.Join(e.m.dir("half"), "build.log"), []byte("log"), 0o644)
	if err := e.m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	half, _ := e.st.GetTemplate(ctx, "half")
	done, _ := e.st.GetTemplate(ctx, "done")
	if half.Status != store.TemplateFailed || !strings.Contains(half.StatusReason, "helper stopped during the build") || done.Status != store.TemplateReady {
		t.Errorf("after recover: %+v / %+v", half, done)
	}
	if _, err := os.Stat(filepath.Join(e.m.dir("half"), "rootfs.partial")); !os.IsNotExist(err) {
		t.Errorf("partial files remain: %v", err)
	}
	if log, err := e.m.BuildLog(ctx, "half"); err != nil || string(log) != "log" {
		t.Errorf("build log: %q %v", log, err)
	}
}

// TestSealRecordsAFailure: sealing a VM whose machine cannot say where its
// layers are ends with a failed template that says why, and the VM is
// gone from the pool; a VM that is not running, or of a host template, is
// refused at once.
func TestSealRecordsAFailure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindHost, vm.KindRootFS)
	e.add(t, store.Template{ID: "base", Name: "Base", OS: "linux", Kind: "rootfs", Status: store.TemplateReady, AgentVersion: "v1"})
	e.add(t, store.Template{ID: "host", Name: "Host", OS: "linux", Kind: "host", Status: store.TemplateReady})
	m, err := e.backend.Create(ctx, vm.Spec{ID: "vm-1", Dir: filepath.Join(e.paths.VMs(), "vm-1"), Template: vm.Template{ID: "base", Kind: vm.KindRootFS}})
	if err != nil {
		t.Fatal(err)
	}
	e.pool.machines["vm-1"] = m
	e.pool.vms = []pool.Info{{ID: "vm-1", TemplateID: "base", State: pool.StateBusy, TaskID: "t"}, {ID: "vm-2", TemplateID: "base", State: pool.StateBooting},
		{ID: "vm-3", TemplateID: "host", State: pool.StateReady}}
	if _, err := e.m.Seal(ctx, SealRequest{VMID: "vm-2"}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("seal of a booting VM: %v", err)
	}
	if _, err := e.m.Seal(ctx, SealRequest{VMID: "vm-3"}); !errors.Is(err, errdefs.ErrUnsupported) {
		t.Errorf("seal of a host-template VM: %v", err)
	}
	tm, err := e.m.Seal(ctx, SealRequest{VMID: "vm-1", Name: "Sealed"})
	if err != nil {
		t.Fatal(err)
	}
	if tm.ID != "sealed-1" || tm.Status != store.TemplateBuilding || tm.ParentID != "base" || tm.SourceVMID != "vm-1" || tm.AgentVersion != "v1" {
		t.Fatalf("seal registered %+v", tm)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cur, _ := e.st.GetTemplate(ctx, tm.ID)
		if cur.Status == store.TemplateFailed {
			if !strings.Contains(cur.StatusReason, "does not say where its root filesystem's layers are") {
				t.Errorf("failure reason: %q", cur.StatusReason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seal still %s", cur.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(e.pool.Snapshot()) != 2 {
		t.Errorf("the sealed VM is still in the pool: %+v", e.pool.Snapshot())
	}
}

// TestMacOSSetup: a macOS template is booted for its guided setup with the
// guest agent kit in its shared folder; finishing shuts it down, removes
// the kit and records the kit's agent version.
func TestMacOSSetup(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, vm.KindMacOS)
	tm := e.add(t, store.Template{ID: "mac", Name: "Mac", OS: "macos", Kind: "macos", Status: store.TemplateSetup, Manifest: "macos-15-base"})
	steps, err := e.m.SetupSteps(ctx, "mac")
	if err != nil || len(steps) < 4 {
		t.Fatalf("steps: %v %v", steps, err)
	}
	got, err := e.m.Setup(ctx, "mac", SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.TemplateSetup || !strings.Contains(got.StatusReason, "hivecrew templates setup mac --finish") {
		t.Errorf("during setup: %+v", got)
	}
	mach := e.backend.Machine("setup-mac")
	if mach == nil || mach.Status().State != vm.StateRunning || mach.Spec().Dir != e.m.dir("mac") {
		t.Fatalf("the template is not running for its setup: %+v", mach)
	}
	kit := filepath.Join(e.m.dir("mac"), "shared", KitDir)
	for _, f := range []string{"hivecrew-guestagent", "com.hivecrew.guestagent.plist", "install-agent.sh"} {
		if _, err := os.Stat(filepath.Join(kit, f)); err != nil {
			t.Errorf("kit lacks %s: %v", f, err)
		}
	}
	if plist, _ := os.ReadFile(filepath.Join(kit, "com.hivecrew.guestagent.plist")); !bytes.Contains(plist, []byte("/Volumes/My Shared Files/hivecrew")) {
		t.Errorf("the kit's LaunchAgent: %s", plist)
	}
	if _, err := e.m.Setup(ctx, "mac", SetupOptions{}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a second setup: %v", err)
	}
	// The running template holds a host slot (issue 16.8).
	if n := e.pool.heldSlots(); n != 1 {
		t.Errorf("%d host slots held during the setup, want 1", n)
	}
	// Finishing asks the guest agent first (issue 35.10): a missing grant
	// is named, and the template keeps running for it.
	mach.Driver().DenyPermissions(protocol.Permissions{Accessibility: true})
	if _, err := e.m.Setup(ctx, tm.ID, SetupOptions{Finish: true}); !errors.Is(err, errdefs.ErrConflict) ||
		!strings.Contains(err.Error(), "Accessibility permission is missing") || strings.Contains(err.Error(), "Screen Recording") {
		t.Fatalf("finishing without the Accessibility grant: %v", err)
	}
	if mach.Status().State != vm.StateRunning {
		t.Fatalf("a refused finish stopped the template: %s", mach.Status().State)
	}
	mach.Driver().DenyPermissions(protocol.Permissions{})
	done, err := e.m.Setup(ctx, tm.ID, SetupOptions{Finish: true})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != store.TemplateReady || done.AgentVersion != "v9.9.9" || mach.Status().State != vm.StateStopped {
		t.Errorf("after finishing: %+v, machine %s", done, mach.Status().State)
	}
	if _, err := os.Stat(kit); !os.IsNotExist(err) {
		t.Errorf("the kit stayed: %v", err)
	}
	if n := e.pool.heldSlots(); n != 0 {
		t.Errorf("%d host slots held after the setup", n)
	}
	// No slot: the template does not boot.
	e.pool.mu.Lock()
	e.pool.full = true
	e.pool.mu.Unlock()
	if _, err := e.m.Setup(ctx, "mac", SetupOptions{}); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "VM slot") {
		t.Errorf("setup without a slot: %v", err)
	}
	if mach.Status().State != vm.StateStopped {
		t.Errorf("the template booted without a slot: %s", mach.Status().State)
	}
	e.pool.mu.Lock()
	e.pool.full = false
	e.pool.mu.Unlock()
	e.add(t, store.Template{ID: "lin", Name: "Lin", OS: "linux", Kind: "rootfs", Status: store.TemplateReady})
	if _, err := e.m.Setup(ctx, "lin", SetupOptions{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("setup of a Linux template: %v", err)
	}
}

// TestRestoreImageFromURL: "latest" asks for the URL, downloads it once
// into the cache with download progress; a local .ipsw is used as it is.
func TestRestoreImageFromURL(t *testing.T) {
	requests := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Write([]byte("ipsw bytes"))
	}))
	defer srv.Close()
	man, err := Builtin("macos-15-base")
	if err != nil {
		t.Fatal(err)
	}
	var seen []Progress
	var log bytes.Buffer
	s := buildSpec{manifest: man, cacheDir: t.TempDir(), log: &log, track: newTracker(macosSpans, func(p Progress) { seen = append(seen, p) })}
	latest := func(context.Context) (string, error) { return srv.URL + "/fw/UniversalMac_15.1_Restore.ipsw", nil }
	for range 2 {
		p, err := restoreImage(context.Background(), s, latest, srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(s.cacheDir, "restore-images", "UniversalMac_15.1_Restore.ipsw"); p != want {
			t.Fatalf("path %s, want %s", p, want)
		}
	}
	if requests != 1 {
		t.Errorf("%d downloads, want 1", requests)
	}
	if last := seen[len(seen)-1]; last.Phase != PhaseDownload || last.Percent != 50 {
		t.Errorf("last progress %+v, want the download phase done", last)
	}
	local := filepath.Join(t.TempDir(), "my.ipsw")
	os.WriteFile(local, []byte("x"), 0o644)
	s.restoreImage = local
	if p, err := restoreImage(context.Background(), s, nil, nil); err != nil || p != local {
		t.Errorf("local image: %s %v", p, err)
	}
	s.restoreImage = filepath.Join(t.TempDir(), "missing.ipsw")
	if _, err := restoreImage(context.Background(), s, nil, nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing image: %v", err)
	}
	if b, _ := json.Marshal(seen[0]); len(b) == 0 {
		t.Error("progress does not marshal")
	}
}
