package pool

import (
	"context"
	"fmt"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
)

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
