package pool

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
)

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
			if ctx.Err() == nil { // else the pool is closing: nothing failed
				p.cfg.Log.Warn("warm VM did not boot", "err", err)
			}
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
