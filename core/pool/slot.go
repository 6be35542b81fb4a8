package pool

import (
	"context"
	"sync"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// A host slot is the room of one running machine that is not a pool VM: a
// macOS template's installer VM, a template booted for its guided setup.
// macOS runs at most two macOS guests; a machine outside the pool that
// the caps did not count made the pool start VMs the host refuses (or
// refuse the installer). Slots count like VMs in every cap.
type slot struct {
	what      string
	cpus, mem int
}

// ReserveSlot holds a host slot for a machine of cpus and memMB that runs
// outside the pool (what names it: "the setup of template X"), waiting
// until the caps allow one, as a task's VM waits; a warm VM is retired to
// make room. onWait, if set, is told why it waits each time that changes.
// It fails when ctx ends or the pool closes. release gives the slot back;
// it may be called more than once.
func (p *Pool) ReserveSlot(ctx context.Context, what string, cpus, memMB int, onWait func(reason string)) (release func(), err error) {
	last := ""
	for {
		lim := p.cfg.Limits()
		if cpus == 0 {
			cpus = lim.CPUs
		}
		if memMB == 0 {
			memMB = lim.MemoryMB
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errdefs.Unavailablef("the VM pool is shutting down")
		}
		if _, held := p.slots[what]; held {
			p.mu.Unlock()
			return nil, errdefs.Conflictf("a host slot is already held for %s", what)
		}
		reason := p.admitLocked(lim, memMB, cpus)
		if reason == "" {
			p.slots[what] = slot{what: what, cpus: cpus, mem: memMB}
			p.kickLocked()
			p.mu.Unlock()
			p.cfg.Log.Info("host slot held", "for", what)
			var once sync.Once
			return func() {
				once.Do(func() {
					p.mu.Lock()
					delete(p.slots, what)
					p.kickLocked()
					p.mu.Unlock()
					p.cfg.Log.Info("host slot released", "for", what)
				})
			}, nil
		}
		evicted := p.evictWarmLocked("")
		ch := p.changed
		p.mu.Unlock()
		if !evicted && reason != last && onWait != nil {
			onWait(reason)
		}
		last = reason
		if err := p.waitChange(ctx, ch); err != nil {
			return nil, err
		}
	}
}
