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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
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
	// ReadyTimeout bounds boot to the guest's hello; default 2 min.
	ReadyTimeout time.Duration
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
		cfg.HostMemoryMB = hostMemoryMB()
	}
	if cfg.MaxCPUs == 0 {
		cfg.MaxCPUs = 4 * hostCPUs()
	}
	if cfg.AvailableMemoryMB == nil {
		cfg.AvailableMemoryMB = availableMemoryMB
	}
	if cfg.ReserveMB == 0 {
		cfg.ReserveMB = max(1024, cfg.HostMemoryMB/10)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 2 * time.Minute
	}
	if cfg.LostAfter == 0 {
		cfg.LostAfter = 5 * time.Second
	}
	if cfg.RetryEvery == 0 {
		cfg.RetryEvery = 10 * time.Second
	}
	p := &Pool{cfg: cfg, entries: map[string]*entry{}, slots: map[string]slot{}, changed: make(chan struct{}), lastUse: time.Now(), gone: map[string]bool{}}
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

// unionHosts is a and b without duplicates, sorted (a when b is empty).
func unionHosts(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// kickLocked wakes everything waiting for a change.
func (p *Pool) kickLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "vm-" + hex.EncodeToString(b)
}

// Request asks for a VM.
type Request struct {
	TaskID   string
	Template vm.Template
	Network  vm.NetworkMode
	// CPUs and MemoryMB default to the Limits'.
	CPUs, MemoryMB int
	// AllowHosts are the task's own additions to Limits.AllowHosts; a VM
	// that allows other hosts is not leased for it.
	AllowHosts []string
	// OnWait, if set, is told why the request waits, each time the reason
	// changes.
	OnWait func(reason string)
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

// usageLocked sums what running and booting VMs hold, and the host slots
// of machines outside the pool.
func (p *Pool) usageLocked() (count, memMB, cpus int) {
	for _, s := range p.slots {
		count++
		memMB += s.mem
		cpus += s.cpus
	}
	for _, e := range p.entries {
		switch e.info.State {
		case StateBooting, StateReady, StateBusy, StateSuspending:
			count++
			memMB += e.info.MemoryMB
			cpus += e.info.CPUs
		}
	}
	return
}

// memoryOvercommit is how far the memory limits of machines that share
// the host's memory (vm.Capabilities.SharedMemory) may add up past it: an
// idle desktop sandbox uses a tenth of a 512 MB limit.
const memoryOvercommit = 4

// admitLocked returns why a VM of mem MB and cpus cannot start now, or "".
func (p *Pool) admitLocked(lim Limits, mem, cpus int) string {
	count, used, usedCPUs := p.usageLocked()
	caps := p.cfg.Backend.Capabilities()
	max := lim.MaxConcurrent
	what := "the maximum number of concurrent VMs (Settings)"
	if hm := caps.MaxRunning; hm > 0 && hm < max {
		max, what = hm, "the host limit for this kind of VM"
	}
	switch {
	case p.leakSeen && count < max:
		return fmt.Sprintf("waiting for a VM slot: the host refuses to start another VM while Hivecrew runs %d (another app holds a slot; close other virtualization apps)", count)
	case count >= max:
		return fmt.Sprintf("waiting for a VM slot: %d of %d in use (%s)", count, max, what)
	case caps.SharedMemory:
		// A sandbox's memory size is a limit, not a reservation: the
		// limits together may overcommit the host, and what counts is what
		// the host still has.
		if limit := p.cfg.HostMemoryMB * memoryOvercommit; used+mem > limit {
			return fmt.Sprintf("waiting for memory: running sandboxes may use up to %d MB together and this one %d MB more, over %d× this host's %d MB", used, mem, memoryOvercommit, p.cfg.HostMemoryMB)
		}
		if avail := p.cfg.AvailableMemoryMB(); avail < p.cfg.ReserveMB {
			return fmt.Sprintf("waiting for memory: the host has %d MB available, under the %d MB kept free for the rest of it", avail, p.cfg.ReserveMB)
		}
	case used+mem > p.cfg.HostMemoryMB:
		return fmt.Sprintf("waiting for memory: running VMs hold %d MB of %d MB and this one needs %d MB", used, p.cfg.HostMemoryMB, mem)
	}
	if usedCPUs+cpus > p.cfg.MaxCPUs && !caps.SharedCPUs {
		return fmt.Sprintf("waiting for CPUs: running VMs hold %d of %d vCPUs and this one needs %d", usedCPUs, p.cfg.MaxCPUs, cpus)
	}
	return ""
}

// Acquire returns a ready VM for the request: a warm one when one matches
// (no boot), otherwise a new one once admission allows, waiting with a
// stated reason meanwhile.
func (p *Pool) Acquire(ctx context.Context, req Request) (*Lease, error) {
	lastReason := ""
	for {
		lim := p.cfg.Limits()
		if req.CPUs == 0 {
			req.CPUs = lim.CPUs
		}
		if req.MemoryMB == 0 {
			req.MemoryMB = lim.MemoryMB
		}
		lim.AllowHosts = unionHosts(lim.AllowHosts, req.AllowHosts)
		k := key(req.Template, req.Network, lim.AllowHosts)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errdefs.Unavailablef("the VM pool is shutting down")
		}
		p.lastUse = time.Now()
		for _, e := range p.entries {
			if e.lease == nil && e.info.State == StateReady && e.key == k {
				l := p.leaseLocked(e, req.TaskID)
				info := e.info
				p.mu.Unlock()
				p.record(info)
				p.cfg.Log.Info("warm VM leased", "vm", info.ID, "task", req.TaskID)
				go p.refill(p.bg)
				return l, nil
			}
		}
		if e := p.suspendedLocked(k, lim); e != nil {
			l := p.leaseLocked(e, req.TaskID)
			e.info.State = StateBooting // leaseLocked marks busy; it is still being restored
			p.wg.Add(1)
			p.mu.Unlock()
			err := p.restore(ctx, e)
			p.wg.Done()
			if err != nil {
				p.cfg.Log.Warn("warm VM not restored; booting another", "vm", e.info.ID, "err", err)
				continue
			}
			go p.refill(p.bg)
			return l, nil
		}
		reason := p.admitLocked(lim, req.MemoryMB, req.CPUs)
		if reason != "" && p.evictWarmLocked(k) {
			reason = "" // room was made by retiring a warm VM of another kind
			ch := p.changed
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if reason == "" {
			e := p.reserveLocked(req.Template, req.Network, req.CPUs, req.MemoryMB, lim, k)
			l := p.leaseLocked(e, req.TaskID)
			l.template = req.Template
			e.info.State = StateBooting // leaseLocked marks busy; it is still booting
			p.wg.Add(1)
			p.mu.Unlock()
			err := p.boot(ctx, e)
			p.wg.Done()
			if err != nil {
				if vm.IsHostLimit(err) {
					p.noteHostLimit()
					continue
				}
				return nil, err
			}
			return l, nil
		}
		ch := p.changed
		p.mu.Unlock()
		if reason != lastReason && req.OnWait != nil {
			req.OnWait(reason)
		}
		lastReason = reason
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(p.cfg.RetryEvery):
			p.mu.Lock()
			p.leakSeen = false // try again: the other app may be gone
			p.mu.Unlock()
		}
	}
}

// suspendedLocked returns a warm VM saved to disk that serves key k and may
// run again within the caps, or nil.
func (p *Pool) suspendedLocked(k string, lim Limits) *entry {
	for _, e := range p.entries {
		if e.lease == nil && e.info.State == StateSuspended && e.key == k && p.admitLocked(lim, e.info.MemoryMB, e.info.CPUs) == "" {
			return e
		}
	}
	return nil
}

// noteHostLimit records that the host refused a start the pool's count
// allowed: a slot is held outside Hivecrew (or leaked by a crashed VM).
func (p *Pool) noteHostLimit() {
	p.mu.Lock()
	count, _, _ := p.usageLocked()
	p.leakSeen = true
	p.kickLocked()
	p.mu.Unlock()
	p.cfg.Log.Error("the host refused to start a VM below its limit: a VM slot is held outside Hivecrew", "running", count)
}

// reserveLocked adds a booting entry that counts against the caps.
func (p *Pool) reserveLocked(t vm.Template, n vm.NetworkMode, cpus, mem int, lim Limits, k string) *entry {
	id := newID()
	now := time.Now()
	e := &entry{
		key:  k,
		done: make(chan struct{}),
		info: Info{
			ID: id, Name: id, Backend: p.cfg.Backend.Capabilities().Name, TemplateID: t.ID,
			State: StateBooting, CPUs: cpus, MemoryMB: mem, Network: n, AllowHosts: slices.Clone(lim.AllowHosts),
			Dir: filepath.Join(p.cfg.Dir, id), Created: now, LastUsed: now,
		},
	}
	p.entries[id] = e
	p.kickLocked()
	return e
}

// boot creates and starts a reserved VM and waits for its guest's hello.
// On failure the reservation is released.
func (p *Pool) boot(ctx context.Context, e *entry) (err error) {
	// A VM discarded while it boots (shutdown, eviction) ends its boot at
	// once instead of waiting out the ready timeout.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	lim := p.cfg.Limits()
	spec := vm.Spec{
		ID: e.info.ID, Name: e.info.Name, Template: templateOf(e, lim), Dir: e.info.Dir,
		CPUs: e.info.CPUs, MemoryMB: e.info.MemoryMB, DiskGB: lim.DiskGB, Network: e.info.Network, AllowHosts: e.info.AllowHosts,
	}
	p.record(e.info)
	defer func() {
		if err != nil {
			p.discard(e, err.Error())
		}
	}()
	m, err := p.cfg.Backend.Create(ctx, spec)
	if err != nil {
		return fmt.Errorf("create VM: %w", err)
	}
	if !p.adopt(e, func() { e.m = m }) {
		m.Delete(context.Background())
		return errdefs.Unavailablef("the VM pool is shutting down")
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("start VM: %w", err)
	}
	return p.ready(ctx, e, m)
}

// ready waits for the guest of a started (or restored) VM to answer hello,
// then marks the VM busy (leased) or ready (warm) and supervises it; a
// warm VM is then saved to disk where the backend can (suspend).
func (p *Pool) ready(ctx context.Context, e *entry, m vm.Machine) error {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	c, err := guest.Connect(rctx, guest.Config{Dial: m.DialGuest, Key: m.GuestKey, Log: p.cfg.Log.With("vm", e.info.ID), OnNotify: e.onNotify})
	if err != nil {
		return fmt.Errorf("the guest of %s did not answer hello within %s: %w", e.info.ID, p.cfg.ReadyTimeout, err)
	}
	p.mu.Lock()
	if _, ok := p.entries[e.info.ID]; !ok {
		// Discarded (shutdown) while booting.
		p.mu.Unlock()
		c.Close()
		m.Delete(context.Background())
		return errdefs.Unavailablef("the VM pool is shutting down")
	}
	e.c = c
	e.watch = make(chan struct{})
	e.info.Limits = m.Status().Limits
	e.info.AgentVersion = c.Hello().AgentVersion
	if e.lease != nil {
		e.info.State = StateBusy
	} else {
		e.info.State = StateReady
	}
	info, watch := e.info, e.watch
	p.kickLocked()
	p.mu.Unlock()
	p.record(info)
	p.cfg.Log.Info("VM ready", "vm", info.ID, "state", info.State, "limits", info.Limits.String())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.supervise(e, m, c, watch)
	}()
	if info.State == StateReady {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.suspend(e)
		}()
	}
	return nil
}

// saveTimeout bounds saving a warm VM to disk.
const saveTimeout = 2 * time.Minute

// stateFile is where a warm VM's saved state is kept.
func stateFile(e *entry) string { return filepath.Join(e.info.Dir, "warm.vzvmsave") }

// suspend saves a ready warm VM to disk (where its machine and backend can)
// and stops it: it then takes no host VM slot and no memory until a task
// restores it (restore). A VM that fails to save is discarded, and warm
// VMs stay running from then on.
func (p *Pool) suspend(e *entry) {
	sr, ok := e.m.(vm.SaveRestorer)
	if !ok || !p.cfg.Backend.Capabilities().SaveRestore {
		return
	}
	p.mu.Lock()
	if _, ok := p.entries[e.info.ID]; !ok || p.saveBroken || p.closed || e.lease != nil || e.info.State != StateReady {
		p.mu.Unlock()
		return
	}
	e.info.State = StateSuspending
	c := e.c
	e.c = nil
	close(e.watch)
	info := e.info
	p.kickLocked()
	p.mu.Unlock()
	p.record(info)
	c.Close()
	started := time.Now()
	ctx, cancel := context.WithTimeout(p.bg, saveTimeout)
	err := sr.Save(ctx, stateFile(e))
	cancel()
	if err != nil {
		p.mu.Lock()
		p.saveBroken = true
		p.mu.Unlock()
		p.cfg.Log.Warn("a warm VM could not be saved to disk; warm VMs stay running from now on", "vm", info.ID, "err", err)
		p.discard(e, "could not be saved to disk: "+err.Error())
		go p.refill(p.bg)
		return
	}
	p.mu.Lock()
	if _, ok := p.entries[e.info.ID]; !ok {
		p.mu.Unlock() // discarded while it was saved
		return
	}
	e.info.State = StateSuspended
	info = e.info
	p.kickLocked()
	p.mu.Unlock()
	p.record(info)
	p.cfg.Log.Info(fmt.Sprintf("warm VM saved to disk in %s", time.Since(started).Round(time.Millisecond)), "vm", info.ID)
}

// restore runs a leased suspended VM again from its saved state and waits
// for its guest. On failure the VM is discarded.
func (p *Pool) restore(ctx context.Context, e *entry) (err error) {
	defer func() {
		if err != nil {
			p.discard(e, err.Error())
		}
	}()
	p.record(e.info)
	started := time.Now()
	if err := e.m.(vm.SaveRestorer).Restore(ctx, stateFile(e)); err != nil {
		return fmt.Errorf("restore VM %s from disk: %w", e.info.ID, err)
	}
	if err := p.ready(ctx, e, e.m); err != nil {
		return err
	}
	p.cfg.Log.Info(fmt.Sprintf("warm VM restored in %s", time.Since(started).Round(time.Millisecond)), "vm", e.info.ID, "task", e.info.TaskID)
	return nil
}

// adopt runs set under the lock if the pool still holds e, and reports
// whether it did.
func (p *Pool) adopt(e *entry, set func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.entries[e.info.ID]; !ok {
		return false
	}
	set()
	return true
}

// templateOf is the template a reserved entry boots; warm entries boot the
// warm template.
func templateOf(e *entry, lim Limits) vm.Template {
	if e.lease != nil {
		return e.lease.template
	}
	return lim.WarmTemplate
}

// discard stops and deletes a VM the pool lets go of, and forgets it.
func (p *Pool) discard(e *entry, reason string) { p.discardKeeping(e, reason, nil, 0) }

// templateStop bounds the graceful stop of a VM that keep reads (a
// template being sealed): its disk must be flushed.
const templateStop = 2 * time.Minute

// discardKeeping is discard; keep, if set, runs on the stopped machine
// before it is deleted, and its error (or the stop's) is returned. The
// stop is forced after stopWithin (templateStop when 0).
func (p *Pool) discardKeeping(e *entry, reason string, keep func(vm.Machine) error, stopWithin time.Duration) error {
	p.mu.Lock()
	if _, ok := p.entries[e.info.ID]; !ok {
		p.mu.Unlock()
		if keep != nil {
			return errdefs.NotFoundf("vm %s is gone", e.info.ID)
		}
		return nil
	}
	delete(p.entries, e.info.ID)
	select {
	case <-e.done:
	default:
		close(e.done)
	}
	m, c := e.m, e.c
	p.kickLocked()
	p.mu.Unlock()
	if c != nil && keep == nil {
		c.Close()
	}
	var kept error
	if keep != nil && m == nil {
		kept = errdefs.Conflictf("vm %s has not booted", e.info.ID)
	}
	if m != nil {
		if keep != nil {
			if stopWithin <= 0 {
				stopWithin = templateStop
			}
			// Its disk is kept: the guest shuts down cleanly, through its
			// agent where the backend needs that (macOS).
			var ask func(context.Context) error
			if c != nil {
				ask = c.Shutdown
			}
			sctx, scancel := context.WithTimeout(context.Background(), stopWithin)
			how, err := vm.StopAs(sctx, m, vm.Keep, ask, stopWithin/2)
			if c != nil {
				c.Close()
			}
			if err != nil {
				kept = fmt.Errorf("stop vm %s: %w", e.info.ID, err)
			} else {
				p.cfg.Log.Info("VM stopped to be kept", "vm", e.info.ID, "how", how)
				kept = keep(m)
			}
			scancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Delete(ctx); err != nil {
			p.cfg.Log.Error("delete VM", "vm", e.info.ID, "err", err)
		}
	}
	p.forget(e.info.ID)
	p.cfg.Log.Info("VM removed", "vm", e.info.ID, "reason", reason)
	return kept
}

// evictWarmLocked retires one ready warm VM that does not match k, to make
// room; it reports whether it did.
func (p *Pool) evictWarmLocked(k string) bool {
	for _, e := range p.entries {
		if e.lease == nil && e.info.State == StateReady && e.key != k {
			e.info.State = StateStopped
			go p.discard(e, "retired to make room for another kind of VM")
			return true
		}
	}
	return false
}

// supervise watches a VM until the pool lets go of it: a machine that
// exits, or a guest unreachable for LostAfter, fails the VM.
func (p *Pool) supervise(e *entry, m vm.Machine, c *guest.Client, watch chan struct{}) {
	exited := m.Exited()
	for {
		select {
		case <-e.done:
			return
		case <-watch:
			return
		case <-exited:
			p.failUnlessSaved(e, watch, "the VM stopped unexpectedly: "+m.Status().Reason)
			return
		case <-c.Refused():
			p.failUnlessSaved(e, watch, c.Err().Error())
			return
		case <-c.Lost():
			deadline := time.NewTimer(p.cfg.LostAfter)
			late := deadline.C
			healthy, told := false, false
			for !healthy {
				select {
				case <-e.done:
					deadline.Stop()
					return
				case <-watch:
					deadline.Stop()
					return
				case <-exited:
					deadline.Stop()
					p.failUnlessSaved(e, watch, "the VM stopped unexpectedly: "+m.Status().Reason)
					return
				case <-c.Refused():
					deadline.Stop()
					p.failUnlessSaved(e, watch, c.Err().Error())
					return
				case <-late:
					why := fmt.Sprintf("the guest agent stopped answering for %s", p.cfg.LostAfter)
					if !e.onReach(false, why) {
						p.failUnlessSaved(e, watch, why)
						return
					}
					// The task holds; the VM runs on, and is watched for
					// its guest's return or its end.
					late, told = nil, true
					p.cfg.Log.Warn("guest agent not answering; its task holds", "vm", e.info.ID)
				case <-time.After(50 * time.Millisecond):
					healthy = c.Healthy()
				}
			}
			deadline.Stop()
			p.cfg.Log.Info("guest agent reconnected", "vm", e.info.ID)
			if told {
				e.onReach(true, "")
			}
		}
	}
}

// failUnlessSaved is fail, unless the run watched is over because the VM
// is being saved to disk (suspend stops it on purpose).
func (p *Pool) failUnlessSaved(e *entry, watch chan struct{}, reason string) {
	select {
	case <-watch:
		return
	default:
	}
	p.fail(e, reason)
}

// fail handles a VM that broke: its task is told why; a warm VM is
// replaced at once.
func (p *Pool) fail(e *entry, reason string) {
	p.cfg.Log.Warn("VM failed", "vm", e.info.ID, "reason", reason)
	p.mu.Lock()
	l := e.lease
	p.mu.Unlock()
	if l == nil {
		p.discard(e, reason)
		go p.refill(p.bg)
		return
	}
	p.setState(e, StateError, reason)
	l.lose(reason)
	// The task keeps the VM's folder until it releases the lease; the
	// machine itself stops now and no longer counts against the caps.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := vm.StopAs(ctx, e.m, vm.Discard, nil, 0); err != nil {
		p.cfg.Log.Warn("stop failed VM", "vm", e.info.ID, "err", err)
	}
}

// refill boots warm VMs until the warm pool is full (while Hivecrew is in
// use: the warm pool empties after IdleTimeout without a request). Its boots
// end when ctx does.
func (p *Pool) refill(ctx context.Context) {
	for {
		if ctx.Err() != nil {
			return
		}
		lim := p.cfg.Limits()
		p.mu.Lock()
		if p.closed || lim.WarmSize <= 0 || time.Since(p.lastUse) > lim.IdleTimeout {
			p.mu.Unlock()
			return
		}
		warm := 0
		wk := key(lim.WarmTemplate, lim.WarmNetwork, lim.AllowHosts)
		for _, e := range p.entries {
			if e.lease == nil && e.key == wk && (e.info.State == StateReady || e.info.State == StateBooting || e.info.State == StateSuspending || e.info.State == StateSuspended) {
				warm++
			}
		}
		if warm >= lim.WarmSize || p.admitLocked(lim, lim.MemoryMB, lim.CPUs) != "" {
			p.mu.Unlock()
			return
		}
		e := p.reserveLocked(lim.WarmTemplate, lim.WarmNetwork, lim.CPUs, lim.MemoryMB, lim, wk)
		p.wg.Add(1)
		p.mu.Unlock()
		bctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
		err := p.boot(bctx, e)
		cancel()
		p.wg.Done()
		if err != nil {
			if vm.IsHostLimit(err) {
				p.noteHostLimit()
			}
			p.cfg.Log.Warn("warm VM did not boot", "err", err)
			return
		}
	}
}

// Run keeps the warm pool filled and retires warm VMs idle for longer than
// IdleTimeout, until ctx ends.
func (p *Pool) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	p.refill(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		lim := p.cfg.Limits()
		p.mu.Lock()
		idle := time.Since(p.lastUse) > lim.IdleTimeout
		var retire []*entry
		for _, e := range p.entries {
			if e.lease == nil && (e.info.State == StateReady || e.info.State == StateSuspended) && idle {
				e.info.State = StateStopped
				retire = append(retire, e)
			}
		}
		p.mu.Unlock()
		for _, e := range retire {
			p.discard(e, fmt.Sprintf("idle for %s", lim.IdleTimeout))
		}
		if !idle {
			p.refill(ctx)
		}
	}
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

// Machine returns a VM of the pool by id.
func (p *Pool) Machine(id string) (vm.Machine, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[id]
	if !ok || e.m == nil {
		return nil, false
	}
	return e.m, true
}

// Remove stops and deletes one VM at the user's request. A leased VM's
// task loses it (its run ends with reason); a warm VM is replaced as the
// warm pool needs.
func (p *Pool) Remove(ctx context.Context, id, reason string) error {
	return p.Take(ctx, id, reason, nil)
}

// Take removes one VM like Remove; with keep, it stops it first and runs
// keep on the stopped machine before deleting it (sealing a template from
// it); keep's error, or the stop's, is returned. A leased VM's task loses it
// with reason.
func (p *Pool) Take(ctx context.Context, id, reason string, keep func(vm.Machine) error) error {
	p.mu.Lock()
	e, ok := p.entries[id]
	var l *Lease
	if ok {
		l = e.lease
	}
	p.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("vm %s not found", id)
	}
	if l != nil {
		l.lose(reason)
	}
	err := p.discardKeeping(e, reason, keep, 0)
	go p.refill(p.bg)
	return err
}

// HostMemoryMB is the machine's total memory.
func HostMemoryMB() int { return hostMemoryMB() }
