// Package devvm runs developer VMs: a VM booted from a template with no
// agent loop, for the user to use by hand (the live view and its input),
// for instance to try a template or prepare one before sealing it.
//
// A developer VM is leased from the pool like a task's: it takes a VM
// slot, shows in the pool's list as busy with no task, and keeps its
// template from being deleted or updated. Open refuses at once (class
// unavailable) when no slot is free rather than queueing. Close releases
// the VM, which is destroyed (its changes go, unless it was sealed into a
// template first); a VM that fails is forgotten. Close of the Manager
// releases every developer VM.
package devvm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Pool leases VMs; *pool.Pool is one.
type Pool interface {
	Acquire(ctx context.Context, req pool.Request) (*pool.Lease, error)
}

// Templates finds a template; *store.Store is one.
type Templates interface {
	GetTemplate(ctx context.Context, id string) (store.Template, error)
}

// Config configures a Manager; every field is required.
type Config struct {
	Pool      Pool
	Templates Templates
	Settings  func() config.Settings
	Log       *slog.Logger
}

// VM is a developer VM.
type VM struct {
	ID         string
	TemplateID string
	Opened     time.Time
	// Screen is the guest's display, as its hello reported it.
	Screen protocol.Screen
}

// Manager holds the developer VMs of one helper. It is safe for
// concurrent use.
type Manager struct {
	cfg Config
	// mu guards vms and closed.
	mu     sync.Mutex
	vms    map[string]*devVM
	closed bool
	wg     sync.WaitGroup
}

type devVM struct {
	info  VM
	lease *pool.Lease
	// done ends the goroutine that watches the lease.
	done chan struct{}
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Pool == nil || cfg.Templates == nil || cfg.Settings == nil || cfg.Log == nil {
		return nil, errors.New("devvm: Pool, Templates, Settings and Log are required")
	}
	return &Manager{cfg: cfg, vms: map[string]*devVM{}}, nil
}

// Open boots a developer VM from a ready template (its resources, the
// network of Settings). It waits for the VM to boot, but not for a slot:
// with none free it is refused (unavailable) and says why.
func (m *Manager) Open(ctx context.Context, templateID string) (VM, error) {
	t, err := m.cfg.Templates.GetTemplate(ctx, templateID)
	if err != nil {
		return VM{}, err
	}
	if t.Status != "" && t.Status != store.TemplateReady {
		return VM{}, errdefs.Conflictf("template %s is %s, not ready", t.ID, t.Status)
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return VM{}, errdefs.Unavailablef("the helper is shutting down")
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req := pool.Request{
		Template: vm.Template{ID: t.ID, Kind: vm.TemplateKind(t.Kind), Path: t.Path},
		Network:  vm.NetworkMode(m.cfg.Settings().NetworkMode), CPUs: t.CPUCount, MemoryMB: t.MemoryMB,
		OnWait: func(reason string) { cancel(errdefs.Unavailablef("no developer VM now: %s", reason)) },
	}
	lease, err := m.cfg.Pool.Acquire(actx, req)
	if err != nil {
		if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
			return VM{}, cause
		}
		return VM{}, fmt.Errorf("open a developer VM of %s: %w", t.ID, err)
	}
	d := &devVM{lease: lease, done: make(chan struct{}),
		info: VM{ID: lease.ID(), TemplateID: t.ID, Opened: time.Now().UTC(), Screen: lease.Guest().Hello().Screen}}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		lease.Release(context.Background())
		return VM{}, errdefs.Unavailablef("the helper is shutting down")
	}
	m.vms[d.info.ID] = d
	m.wg.Add(1)
	m.mu.Unlock()
	go m.watch(d)
	m.cfg.Log.Info("developer VM opened", "vm", d.info.ID, "template", t.ID)
	return d.info, nil
}

// watch forgets a developer VM that fails.
func (m *Manager) watch(d *devVM) {
	defer m.wg.Done()
	select {
	case <-d.lease.Lost():
		m.cfg.Log.Warn("developer VM lost", "vm", d.info.ID, "reason", d.lease.LostReason())
		m.forget(d.info.ID)
		d.lease.Release(context.Background())
	case <-d.done:
	}
}

// forget removes a VM from the list; it returns it if it was there.
func (m *Manager) forget(id string) (*devVM, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.vms[id]
	if ok {
		delete(m.vms, id)
	}
	return d, ok
}

// List returns the developer VMs, oldest first.
func (m *Manager) List() []VM {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]VM, 0, len(m.vms))
	for _, d := range m.vms {
		out = append(out, d.info)
	}
	slices.SortFunc(out, func(a, b VM) int { return a.Opened.Compare(b.Opened) })
	return out
}

// Has reports whether id is a developer VM.
func (m *Manager) Has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.vms[id]
	return ok
}

// Close removes a developer VM: it is stopped and destroyed.
func (m *Manager) Close(ctx context.Context, id string) error {
	d, ok := m.forget(id)
	if !ok {
		return errdefs.NotFoundf("no developer VM %s", id)
	}
	close(d.done)
	if err := d.lease.Release(ctx); err != nil {
		return fmt.Errorf("remove developer VM %s: %w", id, err)
	}
	m.cfg.Log.Info("developer VM removed", "vm", id)
	return nil
}

// get returns a developer VM's lease.
func (m *Manager) get(id string) (*pool.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.vms[id]
	if !ok {
		return nil, errdefs.NotFoundf("no developer VM %s", id)
	}
	return d.lease, nil
}

// Frame takes a screenshot of a developer VM.
func (m *Manager) Frame(ctx context.Context, id string, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	l, err := m.get(id)
	if err != nil {
		return protocol.ScreenshotResult{}, err
	}
	return l.Guest().Screenshot(ctx, p)
}

// Input forwards one pointer or keyboard event of the user to a developer
// VM: it is the user's all along (no agent to take it from).
func (m *Manager) Input(ctx context.Context, id string, in wire.Input) error {
	l, err := m.get(id)
	if err != nil {
		return err
	}
	return l.Guest().Input(ctx, in)
}

// Shutdown releases every developer VM and waits for the watchers.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	ids := make([]string, 0, len(m.vms))
	for id := range m.vms {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := m.Close(ctx, id); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	m.wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("remove developer VMs: %w", errors.Join(errs...))
	}
	return nil
}
