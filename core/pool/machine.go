package pool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "vm-" + hex.EncodeToString(b)
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
	select {
	case p.booting <- struct{}{}:
		defer func() { <-p.booting }()
	case <-ctx.Done():
		return fmt.Errorf("waiting for other VMs to boot: %w", ctx.Err())
	}
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
	kept := e.lease == nil // warm, for a later task
	p.mu.Unlock()
	if err := warmUp(rctx, kept, c); err != nil {
		c.Close()
		return fmt.Errorf("the desktop of %s did not come up within %s: %w", e.info.ID, p.cfg.ReadyTimeout, err)
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

// warmUp waits, for a VM kept warm for a later task, until its desktop is
// fully up (protocol.MethodReady: a Linux sandbox starts AT-SPI after its
// first hello), so that the task finds nothing still starting beside its
// first screenshot, and a warm VM is not suspended halfway. A VM booted
// for a task does not wait: its first screenshot comes sooner, and what
// needs the rest waits for it in the guest.
func warmUp(ctx context.Context, kept bool, c *guest.Client) error {
	if !kept || !c.Has(protocol.CapReady) {
		return nil
	}
	return c.Call(ctx, protocol.MethodReady, nil, nil)
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
