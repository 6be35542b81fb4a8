// Package pool owns the running machines: it keeps a warm pool of ready
// VMs, admits new ones within the caps (max concurrent VMs, the backend's
// host limit, RAM and CPU), states why a request waits, declares a VM ready
// when its guest answers hello, supervises crashes and lost guests, and
// replaces what fails. Every VM serves one task and is destroyed after it;
// warm VMs are fresh clones that no task has touched. Where the backend can
// save a running VM to disk (macOS 14+ guests, vm.SaveRestorer), a warm VM
// is saved once it has booted, so that it holds neither a host VM slot nor
// memory while it waits, and is restored for the next task (see suspend).
package pool

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
)

// State is a VM's state in the pool.
type State string

// Pool states.
const (
	StateBooting    State = "booting"
	StateReady      State = "ready"      // warm, waiting for a task
	StateBusy       State = "busy"       // leased to a task
	StateSuspending State = "suspending" // warm, being saved to disk
	StateSuspended  State = "suspended"  // warm, saved to disk: not running
	StateStopped    State = "stopped"
	StateError      State = "error"
)

// Info describes a VM of the pool, as the API and the store show it.
type Info struct {
	ID, Name   string
	Backend    string
	TemplateID string
	State      State
	// Reason explains StateError.
	Reason   string
	TaskID   string
	CPUs     int
	MemoryMB int
	Network  vm.NetworkMode
	// AllowHosts are what the VM may reach past the egress policy.
	AllowHosts []string
	Limits     vm.Limits
	Dir        string
	Created    time.Time
	LastUsed   time.Time
	// AgentVersion is the guest agent's version from its hello.
	AgentVersion string
}

// Limits are the caps and defaults in force; the pool asks for them each
// time it decides, so settings changes apply at once.
type Limits struct {
	MaxConcurrent int
	WarmSize      int
	IdleTimeout   time.Duration
	CPUs          int
	MemoryMB      int
	DiskGB        int
	// Warm is what the warm pool keeps ready.
	WarmTemplate vm.Template
	WarmNetwork  vm.NetworkMode
	// AllowHosts are what internet-mode VMs may reach past the egress
	// policy; a VM booted with another list is not leased.
	AllowHosts []string
}

// Recorder persists VM records; the daemon's store implements it.
type Recorder interface {
	RecordVM(ctx context.Context, info Info) error
	ForgetVM(ctx context.Context, id string) error
}

// Config configures a Pool. Backend, Dir, Limits and Log are required.
type Config struct {
	Backend vm.Backend
	// Dir holds one folder per machine.
	Dir    string
	Limits func() Limits
	Log    *slog.Logger
	// Recorder, if set, receives every VM state change.
	Recorder Recorder
	// HostMemoryMB caps the memory of all running VMs together; 0 reads
	// the machine's total.
	HostMemoryMB int
	// MaxCPUs caps the vCPUs of all running VMs together; 0 means four per
	// host core.
	MaxCPUs int
	// AvailableMemoryMB reads the memory the host has available for new
	// processes (Linux: MemAvailable); it admits machines of a backend with
	// SharedMemory. Default: read from the OS.
	AvailableMemoryMB func() int
	// ReserveMB is the available memory admission keeps free for the rest
	// of the host when machines share memory; 0 means a tenth of the
	// host's memory, at least 1 GB.
	ReserveMB int
	// ReadyTimeout bounds boot to the guest's hello; default 2 min. A
	// boot waiting for its turn (MaxBooting) has not started it.
	ReadyTimeout time.Duration
	// MaxBooting bounds the VMs booting at once; 0 means two per host
	// core. Booting is the heaviest thing a VM does: 128 sandboxes booting
	// together on 2 cores starved each other, and the running agents,
	// for minutes (guest agents missed their heartbeats, a boot its ready
	// timeout), where in turns each boots in a fraction of a second.
	MaxBooting int
	// LostAfter is how long a guest may be unreachable before its VM is
	// declared failed; default 5 s.
	LostAfter time.Duration
	// RetryEvery is how often a waiting request retries after a refused
	// start; default 10 s.
	RetryEvery time.Duration
}

// Pool manages the machines of one backend. It is safe for concurrent use.
type Pool struct {
	cfg Config

	// mu guards everything below.
	mu       sync.Mutex
	entries  map[string]*entry
	changed  chan struct{} // closed and replaced on every change
	closed   bool
	lastUse  time.Time // last Acquire, for the warm pool's idle timeout
	leakSeen bool      // a host slot is held outside the pool
	// saveBroken is set once saving a warm VM failed: warm VMs then stay
	// running rather than boot and fail to save again and again.
	saveBroken bool
	// slots are host slots held by machines outside the pool (slot.go).
	slots map[string]slot

	// recMu serialises the Recorder's calls and guards gone, the VMs
	// already forgotten.
	recMu sync.Mutex
	gone  map[string]bool

	wg sync.WaitGroup // supervisors and background work
	// booting holds a token per VM booting (Config.MaxBooting).
	booting chan struct{}

	// bg is the pool's lifetime: background boots end when Close cancels it.
	bg     context.Context
	stopBg context.CancelFunc
}

type entry struct {
	info  Info
	m     vm.Machine
	c     *guest.Client
	lease *Lease
	key   string        // template and network, for warm matching
	done  chan struct{} // closed when the pool lets go of the VM
	// watch is closed to end the supervision of the VM's current run (it
	// is being saved to disk).
	watch chan struct{}
	// notify receives the guest's notifications for the lease holder
	// (Lease.OnNotify); nil drops them.
	notify atomic.Pointer[func(method string, params json.RawMessage)]
	// reach, when set, hears of a guest that stops and starts answering
	// while its VM runs (Lease.OnGuestReach).
	reach atomic.Pointer[func(up bool, reason string)]
}

// onReach tells the lease holder the guest's reachability; false when no
// holder takes it.
func (e *entry) onReach(up bool, reason string) bool {
	if f := e.reach.Load(); f != nil {
		(*f)(up, reason)
		return true
	}
	return false
}

// onNotify passes a guest notification to the lease holder. It runs on the
// guest connection's reader.
func (e *entry) onNotify(method string, params json.RawMessage) {
	if f := e.notify.Load(); f != nil {
		(*f)(method, params)
	}
}

// New returns a pool; call Run to keep the warm pool and Close to stop.
func New(cfg Config) (*Pool, error) {
	if cfg.Backend == nil || cfg.Dir == "" || cfg.Limits == nil || cfg.Log == nil {
		return nil, errors.New("pool: Backend, Dir, Limits and Log are required")
	}
	if cfg.HostMemoryMB == 0 {
		cfg.HostMemoryMB = vm.HostMemoryMB()
	}
	if cfg.MaxCPUs == 0 {
		cfg.MaxCPUs = 4 * runtime.NumCPU()
	}
	if cfg.AvailableMemoryMB == nil {
		cfg.AvailableMemoryMB = vm.AvailableMemoryMB
	}
	if cfg.ReserveMB == 0 {
		cfg.ReserveMB = vm.ReserveMB(cfg.HostMemoryMB)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 2 * time.Minute
	}
	if cfg.MaxBooting == 0 {
		cfg.MaxBooting = max(2, 2*runtime.NumCPU())
	}
	if cfg.LostAfter == 0 {
		cfg.LostAfter = 5 * time.Second
	}
	if cfg.RetryEvery == 0 {
		cfg.RetryEvery = 10 * time.Second
	}
	p := &Pool{cfg: cfg, entries: map[string]*entry{}, slots: map[string]slot{}, changed: make(chan struct{}), lastUse: time.Now(), gone: map[string]bool{},
		booting: make(chan struct{}, cfg.MaxBooting)}
	p.bg, p.stopBg = context.WithCancel(context.Background())
	return p, nil
}

func key(t vm.Template, n vm.NetworkMode, allow []string) string {
	k := t.ID + "\x00" + string(t.Kind) + "\x00" + string(n)
	if n == vm.NetworkInternet && len(allow) > 0 {
		k += "\x00" + strings.Join(slices.Sorted(slices.Values(allow)), ",")
	}
	return k
}

// kickLocked wakes everything waiting for a change.
func (p *Pool) kickLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Snapshot lists the pool's VMs.
func (p *Pool) Snapshot() []Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Info, 0, len(p.entries))
	for _, e := range p.entries {
		out = append(out, e.info)
	}
	return out
}

func (p *Pool) record(info Info) {
	if p.cfg.Recorder == nil {
		return
	}
	// A state change that loses the race with the VM's removal must not
	// bring its record back.
	p.recMu.Lock()
	defer p.recMu.Unlock()
	if p.gone[info.ID] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.cfg.Recorder.RecordVM(ctx, info); err != nil {
		p.cfg.Log.Warn("record VM", "vm", info.ID, "err", err)
	}
}

func (p *Pool) forget(id string) {
	if p.cfg.Recorder == nil {
		return
	}
	p.recMu.Lock()
	defer p.recMu.Unlock()
	p.gone[id] = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.cfg.Recorder.ForgetVM(ctx, id); err != nil {
		p.cfg.Log.Warn("forget VM", "vm", id, "err", err)
	}
}

// setState changes a VM's state and records it.
func (p *Pool) setState(e *entry, s State, reason string) {
	p.mu.Lock()
	e.info.State, e.info.Reason = s, reason
	info := e.info
	p.kickLocked()
	p.mu.Unlock()
	p.record(info)
}

// Close stops accepting requests and deletes every VM, leased or not.
func (p *Pool) Close(ctx context.Context) error {
	p.stopBg()
	p.mu.Lock()
	p.closed = true
	var all []*entry
	for _, e := range p.entries {
		all = append(all, e)
	}
	p.kickLocked()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l := e.lease; l != nil {
				l.lose("Hivecrew is shutting down")
			}
			p.discard(e, "shutdown")
		}()
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
