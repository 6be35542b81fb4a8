package devvm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// templates is a fixed set of templates.
type templates map[string]store.Template

func (ts templates) GetTemplate(_ context.Context, id string) (store.Template, error) {
	t, ok := ts[id]
	if !ok {
		return store.Template{}, errdefs.NotFoundf("template %s not found", id)
	}
	return t, nil
}

// env is a real pool of fake VMs with two slots, and a Manager on it.
type env struct {
	m *Manager
	p *pool.Pool
	b *fake.Backend
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b := fake.New(fake.Options{})
	p, err := pool.New(pool.Config{Backend: b, Dir: t.TempDir(), Log: slog.New(slog.DiscardHandler), HostMemoryMB: 64 << 10,
		Limits: func() pool.Limits {
			return pool.Limits{MaxConcurrent: 2, IdleTimeout: time.Hour, CPUs: 1, MemoryMB: 1024}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	ts := templates{
		"host":     {ID: "host", Kind: string(vm.KindHost), Status: store.TemplateReady},
		"building": {ID: "building", Kind: string(vm.KindHost), Status: store.TemplateBuilding},
	}
	m, err := New(Config{Pool: p, Templates: ts, Settings: func() config.Settings { return config.Defaults("linux", t.TempDir()) },
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Shutdown(context.Background())
		cancel()
		<-done
		p.Close(context.Background())
	})
	return &env{m: m, p: p, b: b}
}

func (e *env) info(id string) (pool.Info, bool) {
	for _, v := range e.p.Snapshot() {
		if v.ID == id {
			return v, true
		}
	}
	return pool.Info{}, false
}

// TestDeveloperVMLifecycle: a developer VM boots from its template, holds
// a VM slot (busy, no task), shows the guest's screen and takes the
// user's input at once; with both slots taken a third is refused with the
// reason rather than queued; Close destroys the VM and frees its slot.
func TestDeveloperVMLifecycle(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // after the pool and the Manager stopped
	e := newEnv(t)
	ctx := context.Background()
	v, err := e.m.Open(ctx, "host")
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := e.info(v.ID); !ok || info.State != pool.StateBusy || info.TaskID != "" || info.TemplateID != "host" {
		t.Fatalf("in the pool: %+v (%v)", info, ok)
	}
	if got := e.m.List(); len(got) != 1 || got[0].ID != v.ID || !e.m.Has(v.ID) || v.Screen.Width == 0 {
		t.Fatalf("list %+v, opened %+v", got, v)
	}
	shot, err := e.m.Frame(ctx, v.ID, protocol.ScreenshotParams{})
	if err != nil || len(shot.Data) == 0 {
		t.Fatalf("frame: %v (%d bytes)", err, len(shot.Data))
	}
	if err := e.m.Input(ctx, v.ID, wire.Input{Type: "click", X: 12, Y: 34}); err != nil {
		t.Fatal(err)
	}
	acts := e.b.Machine(v.ID).Driver().Actions()
	if len(acts) == 0 || acts[len(acts)-1].Kind != "click" || acts[len(acts)-1].X != 12 || acts[len(acts)-1].Y != 34 {
		t.Errorf("the guest received %+v", acts)
	}
	if err := e.m.Input(ctx, v.ID, wire.Input{Type: "click", X: 99999, Y: 1}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a click off the screen: %v", err)
	}

	second, err := e.m.Open(ctx, "host")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Open(ctx, "host"); !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "2 of 2 in use") {
		t.Fatalf("a third with two slots: %v", err)
	}
	if _, err := e.m.Open(ctx, "building"); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a template that is not ready: %v", err)
	}
	if _, err := e.m.Open(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("an unknown template: %v", err)
	}

	if err := e.m.Close(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.info(v.ID); ok {
		t.Errorf("%s is still in the pool", v.ID)
	}
	if err := e.m.Close(ctx, v.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a second close: %v", err)
	}
	if _, err := e.m.Frame(ctx, v.ID, protocol.ScreenshotParams{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a frame of a removed VM: %v", err)
	}
	third, err := e.m.Open(ctx, "host")
	if err != nil {
		t.Fatalf("the freed slot: %v", err)
	}
	if got := e.m.List(); len(got) != 2 || got[0].ID != second.ID || got[1].ID != third.ID {
		t.Errorf("list %+v", got)
	}
}

// TestDeveloperVMThatFailsIsForgotten: a crashed developer VM leaves the
// list and its slot.
func TestDeveloperVMThatFailsIsForgotten(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v, err := e.m.Open(ctx, "host")
	if err != nil {
		t.Fatal(err)
	}
	e.b.Machine(v.ID).Crash()
	deadline := time.Now().Add(5 * time.Second)
	for e.m.Has(v.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the crashed VM is still listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		if _, ok := e.info(v.ID); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the crashed VM still holds its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
