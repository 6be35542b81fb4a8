package pool

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Lease is a VM given to one task until Release.
type Lease struct {
	p        *Pool
	e        *entry
	template vm.Template

	lost chan struct{}
	// mu guards reason and released.
	mu       sync.Mutex
	reason   string
	released bool
}

// leaseLocked gives e to a task.
func (p *Pool) leaseLocked(e *entry, taskID string) *Lease {
	l := &Lease{p: p, e: e, lost: make(chan struct{})}
	e.lease = l
	e.info.TaskID = taskID
	e.info.State = StateBusy
	e.info.LastUsed = time.Now()
	p.kickLocked()
	return l
}

// ID is the VM's id.
func (l *Lease) ID() string { return l.e.info.ID }

// Machine is the leased VM.
func (l *Lease) Machine() vm.Machine { return l.e.m }

// Guest is the client of the VM's guest agent.
func (l *Lease) Guest() *guest.Client { return l.e.c }

// OnNotify sends the guest's notifications ($/shellOutput) to f, which
// must not block; nil stops them.
func (l *Lease) OnNotify(f func(method string, params json.RawMessage)) {
	if f == nil {
		l.e.notify.Store(nil)
		return
	}
	l.e.notify.Store(&f)
}

// OnGuestReach makes the lease holder, not the pool, handle a guest agent
// that stops answering while its VM runs: f is called with false and why
// once it has not answered for the pool's LostAfter (the VM is not failed,
// and keeps running), and with true if it answers again. nil (the
// default) fails the VM instead. f must not block.
func (l *Lease) OnGuestReach(f func(up bool, reason string)) {
	if f == nil {
		l.e.reach.Store(nil)
		return
	}
	l.e.reach.Store(&f)
}

// Lost is closed when the VM fails (crash, guest unreachable, shutdown);
// LostReason then says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// LostReason says why Lost was closed.
func (l *Lease) LostReason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

func (l *Lease) lose(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reason == "" {
		l.reason = reason
		close(l.lost)
	}
}

// ReleaseAfter ends the lease like Release, but first stops the VM (by
// force after stopWithin) and runs keep on the stopped machine: nothing in
// the guest runs any more while keep reads its folders (a guest cannot
// swap a FIFO or a link in under it). keep's error, or the stop's, is
// returned; the VM is deleted either way.
func (l *Lease) ReleaseAfter(stopWithin time.Duration, keep func(vm.Machine) error) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return errdefs.Conflictf("vm %s was released", l.e.info.ID)
	}
	l.released = true
	l.mu.Unlock()
	err := l.p.discardKeeping(l.e, "task finished", keep, stopWithin)
	go l.p.refill(l.p.bg)
	return err
}

// Release ends the lease: the VM is destroyed (a VM serves one task) and the
// warm pool refilled. Release is idempotent.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	l.mu.Unlock()
	l.p.discard(l.e, "task finished")
	go l.p.refill(l.p.bg)
	return nil
}
