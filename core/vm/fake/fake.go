// Package fake is a VM backend for the tests of the layers above the VM
// layer: each machine serves the real guest-agent server on a real unix
// socket in its folder, with a recording driver (Driver) instead of a
// screen. It can simulate crashes and a host limit on running machines.
package fake

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// Options configure the backend.
type Options struct {
	// MaxRunning simulates a host limit (as macOS has); 0 means none.
	MaxRunning int
	// StartDelay simulates boot time before Start returns.
	StartDelay time.Duration
	// ReadyDelay simulates a guest agent that comes up after Start has
	// returned (as in a VM that is still booting): the guest listens only
	// then.
	ReadyDelay time.Duration
	// Screen of every guest; default 1280x800 at scale 1.
	Width, Height int
	Scale         float64
	Log           *slog.Logger
	// SaveRestore makes machines savable to disk (vm.SaveRestorer), as
	// macOS 14+ guests are; SaveErr, when set, is what every save fails
	// with.
	SaveRestore bool
	SaveErr     error
	// SharedMemory makes the backend's machines share the host's memory
	// (as sandboxes do): admission checks available memory, not caps.
	SharedMemory bool
	// MemoryCapped reports the machines' memory capped together (with
	// SharedMemory: admission counts what the host has available alone).
	MemoryCapped bool
	// Apps makes the guest answer resolve_app (protocol.CapResolveApp):
	// what open_app or open_file with an app would start, by the name
	// given; a file's default application under "default:" and the
	// file's base name. A name it lacks opens nothing. Without Apps the
	// guest is one older than resolve_app.
	Apps map[string]protocol.ResolvedApp
	// Warm makes the guest bring part of its desktop up after its first
	// hello (a server.Warmer, as a Linux sandbox's AT-SPI): Warm is
	// called as the guest agent calls it. Not with Apps.
	Warm func(ctx context.Context) error
}

// Backend is the fake backend.
type Backend struct {
	opts Options
	// mu guards running and machines.
	mu       sync.Mutex
	running  int
	machines map[string]*Machine
	// saves and restores count what machines did.
	saves, restores int
}

var _ vm.Backend = (*Backend)(nil)

// New returns a fake backend.
func New(o Options) *Backend {
	if o.Width == 0 {
		o.Width, o.Height = 1280, 800
	}
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Backend{opts: o, machines: map[string]*Machine{}}
}

// Capabilities implements vm.Backend.
func (b *Backend) Capabilities() vm.Capabilities {
	return vm.Capabilities{
		Name: "fake", GuestOS: "linux",
		Kinds:      []vm.TemplateKind{vm.KindHost, vm.KindRootFS},
		Networks:   []vm.NetworkMode{vm.NetworkOffline, vm.NetworkInternet},
		MaxRunning: b.opts.MaxRunning, SaveRestore: b.opts.SaveRestore, SharedMemory: b.opts.SharedMemory, MemoryCapped: b.opts.MemoryCapped,
	}
}

// SavesAndRestores says how many times machines were saved to disk and
// restored from it.
func (b *Backend) SavesAndRestores() (saves, restores int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.saves, b.restores
}

// Machine returns a machine by id, for tests that inspect its driver.
func (b *Backend) Machine(id string) *Machine {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.machines[id]
}

// Create implements vm.Backend.
func (b *Backend) Create(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	if spec.ID == "" || spec.Dir == "" {
		return nil, errdefs.Invalidf("a machine needs an id and a folder")
	}
	if _, err := os.Stat(spec.Dir); err == nil {
		return nil, errdefs.Conflictf("machine folder %s already exists", spec.Dir)
	}
	return b.Load(ctx, spec)
}

// Load implements vm.Backend.
func (b *Backend) Load(ctx context.Context, spec vm.Spec) (vm.Machine, error) {
	for _, d := range []string{protocol.InboxDir, protocol.OutboxDir, protocol.WorkspaceDir} {
		if err := os.MkdirAll(filepath.Join(spec.SharedDir(), d), 0o755); err != nil {
			return nil, err
		}
	}
	m := &Machine{b: b, spec: spec, driver: NewDriver(b.opts.Width, b.opts.Height, b.opts.Scale), exited: vm.AlreadyExited()}
	m.status = vm.Status{State: vm.StateStopped, Limits: fakeLimits}
	b.mu.Lock()
	b.machines[spec.ID] = m
	b.mu.Unlock()
	return m, nil
}

// Machine is a fake machine.
type Machine struct {
	b      *Backend
	spec   vm.Spec
	driver *Driver

	// starts lets Stop and Delete end a Start in progress.
	starts vm.StartGuard

	// mu guards everything below.
	mu     sync.Mutex
	status vm.Status
	cancel context.CancelFunc
	srv    *server.Server
	// key is the boot key of the current start.
	key    []byte
	exited chan struct{}
	served chan struct{}
}

var (
	_ vm.Machine      = (*Machine)(nil)
	_ vm.SaveRestorer = (*Machine)(nil)
)

// Driver is the machine's recording guest driver.
func (m *Machine) Driver() *Driver { return m.driver }

func (m *Machine) Spec() vm.Spec { return m.spec }

func (m *Machine) Status() vm.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

func (m *Machine) Exited() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited
}

func (m *Machine) socket() string { return filepath.Join(m.spec.Dir, "agent.sock") }

// Start implements vm.Machine.
func (m *Machine) Start(ctx context.Context) error {
	ctx, end, err := m.starts.Begin(ctx, m.spec.ID)
	if err != nil {
		return err
	}
	defer end()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.status.State == vm.StateRunning {
		return nil
	}
	if max := m.b.opts.MaxRunning; max > 0 {
		m.b.mu.Lock()
		full := m.b.running >= max
		if !full {
			m.b.running++
		}
		m.b.mu.Unlock()
		if full {
			return fmt.Errorf("start %s: %w", m.spec.ID, vm.ErrHostLimit)
		}
	}
	if m.b.opts.StartDelay > 0 {
		select {
		case <-time.After(m.b.opts.StartDelay):
		case <-ctx.Done():
			m.releaseSlot()
			return ctx.Err()
		}
	}
	os.Remove(m.socket())
	key := vm.NewGuestKey()
	var driver server.Driver = m.driver
	switch {
	case m.b.opts.Apps != nil:
		driver = resolving{Driver: m.driver, apps: m.b.opts.Apps}
	case m.b.opts.Warm != nil:
		driver = warming{Driver: m.driver, warm: m.b.opts.Warm}
	}
	srv, err := server.New(server.Config{SharedDir: m.spec.SharedDir(), Driver: driver, Log: m.b.opts.Log, AgentVersion: "fake", Key: key})
	if err != nil {
		m.releaseSlot()
		return err
	}
	listen := func() (net.Listener, error) { return net.Listen("unix", m.socket()) }
	var ln net.Listener
	if m.b.opts.ReadyDelay == 0 {
		if ln, err = listen(); err != nil {
			srv.Close()
			m.releaseSlot()
			return err
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	m.srv, m.cancel, m.key = srv, cancel, key
	m.exited, m.served = make(chan struct{}), make(chan struct{})
	m.status = vm.Status{State: vm.StateRunning, Limits: fakeLimits}
	exited, served := m.exited, m.served
	go func() {
		if ln == nil { // the guest comes up later
			select {
			case <-time.After(m.b.opts.ReadyDelay):
				ln, _ = listen()
			case <-sctx.Done():
			}
		}
		if ln != nil {
			srv.Serve(sctx, ln)
		}
		srv.Close()
		close(served)
		m.mu.Lock()
		if m.status.State == vm.StateRunning {
			m.status = vm.Status{State: vm.StateError, Reason: "guest stopped unexpectedly", Limits: m.status.Limits}
		}
		m.mu.Unlock()
		m.releaseSlot()
		close(exited)
	}()
	return nil
}

func (m *Machine) releaseSlot() {
	if m.b.opts.MaxRunning > 0 {
		m.b.mu.Lock()
		m.b.running--
		m.b.mu.Unlock()
	}
}

// Crash stops the guest abruptly, as a killed sandbox would.
func (m *Machine) Crash() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop implements vm.Machine.
func (m *Machine) Stop(ctx context.Context) error {
	if err := m.starts.Abort(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", m.spec.ID, err)
	}
	m.mu.Lock()
	if m.status.State != vm.StateRunning {
		m.mu.Unlock()
		return nil
	}
	m.status.State = vm.StateStopping
	cancel, served := m.cancel, m.served
	m.mu.Unlock()
	cancel()
	select {
	case <-served:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	m.status = vm.Status{State: vm.StateStopped, Reason: "stopped", Limits: m.status.Limits}
	m.mu.Unlock()
	return nil
}

// Delete implements vm.Machine.
func (m *Machine) Delete(ctx context.Context) error {
	return vm.DeleteMachine(ctx, &m.starts, m.spec.ID, m.Stop, func() error {
		m.b.mu.Lock()
		delete(m.b.machines, m.spec.ID)
		m.b.mu.Unlock()
		return nil
	}, m.spec.Dir)
}

// GuestKey implements vm.Machine: the key of the guest's current start,
// given to its server directly.
func (m *Machine) GuestKey() ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.key, false
}

// DialGuest implements vm.Machine.
func (m *Machine) DialGuest(ctx context.Context) (net.Conn, error) {
	return vm.DialSocket(ctx, m, m.socket())
}

// fakeLimits are a fake machine's: nothing runs, so nothing is capped.
var fakeLimits = vm.Limits{Processes: "none (fake)", Memory: "none (fake)"}

// savedState is what a fake machine's saved state file holds.
const savedState = "fake saved state\n"

// Save implements vm.SaveRestorer: the state is written to path and the
// machine stopped (its host slot freed), as a VZ save does.
func (m *Machine) Save(ctx context.Context, path string) error {
	if m.Status().State != vm.StateRunning {
		return vm.ErrNotRunning
	}
	if err := m.b.opts.SaveErr; err != nil {
		return fmt.Errorf("save %s: %w", m.spec.ID, err)
	}
	if err := os.WriteFile(path, []byte(savedState), 0o600); err != nil {
		return err
	}
	if err := m.Stop(ctx); err != nil {
		return err
	}
	m.b.mu.Lock()
	m.b.saves++
	m.b.mu.Unlock()
	return nil
}

// Restore implements vm.SaveRestorer: the machine starts again from the
// state Save wrote (a missing or foreign file is refused).
func (m *Machine) Restore(ctx context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil || string(b) != savedState {
		return fmt.Errorf("restore %s: no saved state at %s (%v)", m.spec.ID, path, err)
	}
	if err := m.Start(ctx); err != nil {
		return err
	}
	m.b.mu.Lock()
	m.b.restores++
	m.b.mu.Unlock()
	return nil
}
