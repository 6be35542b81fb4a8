package pool

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// unionHosts is a and b without duplicates, sorted (a when b is empty).
func unionHosts(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
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
		// limits together may overcommit the host (without bound when the
		// backend caps them all together), and what counts is what the
		// host still has.
		if limit := p.cfg.HostMemoryMB * memoryOvercommit; used+mem > limit && !caps.MemoryCapped {
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
		if err := p.waitChange(ctx, ch); err != nil {
			return nil, err
		}
	}
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

// waitChange waits, after a refusal, for the pool to change (ch), ctx to
// end, or RetryEvery to pass; then a VM that leaked outside the pool is
// looked for again, since the other app may be gone.
func (p *Pool) waitChange(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(p.cfg.RetryEvery):
		p.mu.Lock()
		p.leakSeen = false
		p.mu.Unlock()
	}
	return nil
}
