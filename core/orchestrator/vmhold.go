package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/writeback"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// A task held by the system (an LLM error, a budget, a limit, a guest that
// stopped answering: agent/hold.go) does not keep a VM slot forever. Once
// it has been held for Settings' releasePausedVMMinutes, its VM is stopped,
// its outbox kept in the session's carried/ folder, and the VM released:
// the task keeps its conversation and trace. Resuming it leases a fresh VM
// the way the first was asked for, gives it the inputs and the kept outbox,
// tells the model, and goes on. A resumed task whose guest still does not
// answer gets a fresh VM the same way. A task the user paused, took over,
// or that asked the user for help keeps its VM.

// checkHeldEvery is how often a run looks at how long it has been held.
const checkHeldEvery = 250 * time.Millisecond

// carriedDir is where a session keeps the outbox of its released VMs (as
// carried/outbox).
func carriedDir(sessionDir string) string { return filepath.Join(sessionDir, "carried") }

// fractionMinutes is a setting in minutes (fractions allowed) as a duration.
func fractionMinutes(m float64) time.Duration { return time.Duration(m * float64(time.Minute)) }

// runGuest is the agent's guest: the run's current VM's, or ErrNoVM while
// it has none.
type runGuest struct{ r *run }

func (g runGuest) client() *guest.Client {
	if _, l, _ := g.r.get(); l != nil {
		return l.Guest()
	}
	return nil
}

func (g runGuest) Hello() protocol.HelloResult {
	if c := g.client(); c != nil {
		return c.Hello()
	}
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	return g.r.hello
}

func (g runGuest) Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	c := g.client()
	if c == nil {
		return protocol.ScreenshotResult{}, agent.ErrNoVM
	}
	return c.Screenshot(ctx, p)
}

func (g runGuest) Call(ctx context.Context, method string, params, result any) error {
	c := g.client()
	if c == nil {
		return agent.ErrNoVM
	}
	return c.Call(ctx, method, params, result)
}

func (g runGuest) ReadDocument(ctx context.Context, p protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
	c := g.client()
	if c == nil {
		return protocol.DocumentResult{}, agent.ErrNoVM
	}
	return c.ReadDocument(ctx, p)
}

func (g runGuest) Healthy() bool {
	c := g.client()
	return c != nil && c.Healthy()
}

// attach makes lease the run's VM: its shell output goes to the agent, and
// a guest that stops answering holds the task (and one that answers again
// resumes it, if nothing else holds it).
func (o *Orchestrator) attach(r *run, lease *pool.Lease, runner *agent.Runner) {
	lease.OnNotify(func(method string, params json.RawMessage) {
		if method == protocol.NotifyShellOutput {
			runner.ShellOutput(params)
		}
	})
	lease.OnGuestReach(func(up bool, why string) {
		// Called on the pool's watch of the VM, which must not wait on
		// the store.
		go func() {
			if !up {
				runner.Hold(agent.GuestLost + " (" + why + "; the VM still runs): resume to go on (a VM that still does not answer is replaced by a fresh one), or cancel")
				return
			}
			if _, reason := runner.Status(); strings.HasPrefix(reason, agent.GuestLost) && runner.Resume("") {
				o.emitInfo(r, "The guest agent answers again: the task goes on.")
			}
		}()
	})
	r.mu.Lock()
	r.setLeaseLocked(lease)
	r.hello = lease.Guest().Hello()
	r.mu.Unlock()
}

// setLeaseLocked changes the run's VM and wakes watchVM.
func (r *run) setLeaseLocked(l *pool.Lease) {
	r.lease = l
	if r.swapped != nil {
		close(r.swapped)
	}
	r.swapped = make(chan struct{})
}

// watchVM ends the run when its VM fails, whichever VM it has.
func (o *Orchestrator) watchVM(ctx context.Context, r *run, cancelRun context.CancelCauseFunc) {
	for {
		r.mu.Lock()
		l, swapped := r.lease, r.swapped
		r.mu.Unlock()
		var lost <-chan struct{}
		if l != nil {
			lost = l.Lost()
		}
		select {
		case <-lost:
			cancelRun(vmLost{l.LostReason()})
			return
		case <-swapped:
		case <-ctx.Done():
			return
		}
	}
}

// releaseWhenHeld releases the VM of a task held by the system for
// releasePausedVMMinutes (0: never).
func (o *Orchestrator) releaseWhenHeld(ctx context.Context, r *run, t store.Task, sessionDir string) {
	tick := time.NewTicker(checkHeldEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		after := fractionMinutes(o.cfg.Settings().ReleasePausedVMMinutes)
		runner, lease, _ := r.get()
		if after <= 0 || lease == nil || runner == nil {
			continue
		}
		since, ok := runner.Parkable()
		if !ok || time.Since(since) < after {
			continue
		}
		n, released, err := o.releaseVM(ctx, r, t, sessionDir, after)
		if err != nil {
			if ctx.Err() == nil {
				o.cfg.Log.Error("release the VM of a held task", "task", t.ID, "err", err)
			}
			continue
		}
		if !released {
			continue
		}
		o.Kick() // its slot is free
		held := time.Since(since).Round(time.Second)
		o.emitInfo(r, fmt.Sprintf("Released the task's VM after it was held for %s (%d outbox file(s) kept): resuming it starts a fresh VM.", held, n))
	}
}

// releaseVM stops the run's VM, keeps its outbox in the session's carried
// folder, and releases it; with heldFor, only if the agent is still held
// (parkable) that long. It returns how many outbox files were kept, and
// whether it released a VM.
func (o *Orchestrator) releaseVM(ctx context.Context, r *run, t store.Task, sessionDir string, heldFor time.Duration) (int, bool, error) {
	return o.releaseVMWithin(ctx, r, t, sessionDir, heldFor, finishedCollect)
}

// releaseVMWithin is releaseVM with the outbox kept within collectWithin.
func (o *Orchestrator) releaseVMWithin(ctx context.Context, r *run, t store.Task, sessionDir string, heldFor, collectWithin time.Duration) (int, bool, error) {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if ctx.Err() != nil {
		return 0, false, ctx.Err()
	}
	r.mu.Lock()
	lease, runner := r.lease, r.runner
	if lease == nil {
		r.mu.Unlock()
		return 0, false, nil
	}
	if heldFor > 0 {
		if since, ok := runner.Parkable(); !ok || time.Since(since) < heldFor {
			r.mu.Unlock()
			return 0, false, nil // resumed meanwhile
		}
	}
	r.setLeaseLocked(nil)
	r.mu.Unlock()
	lease.OnNotify(nil)
	lease.OnGuestReach(nil)
	shared := lease.Machine().Spec().SharedDir()
	carried := carriedDir(sessionDir)
	n := 0
	err := lease.ReleaseAfter(stoppedStop, func(vm.Machine) error {
		// The stopped VM's outbox replaces what earlier VMs left: the fresh
		// VM had that and may have changed it.
		cctx, cancel := context.WithTimeout(background(), collectWithin)
		defer cancel()
		next := carried + ".next"
		if err := os.RemoveAll(next); err != nil {
			return err
		}
		// Made even when there is nothing to keep (an empty outbox, no
		// host folders): the rename below needs it.
		if err := os.MkdirAll(next, 0o700); err != nil {
			return err
		}
		col, err := files.Collect(cctx, filepath.Join(shared, files.Outbox), filepath.Join(next, files.Outbox), outputLimits(o.cfg.Settings()))
		if err != nil {
			return fmt.Errorf("keep the outbox: %w", err)
		}
		n = len(col.Collected)
		if err := writeback.Keep(cctx, shared, next); err != nil {
			return fmt.Errorf("keep the host folders' copies: %w", err)
		}
		if err := os.RemoveAll(carried); err != nil {
			return err
		}
		return os.Rename(next, carried)
	})
	if _, uerr := o.update(t.ID, store.Update{Mutate: func(t *store.Task) error {
		if t.Status.Terminal() {
			return nil
		}
		t.VMID = ""
		return nil
	}}); uerr != nil && !errors.Is(uerr, context.Canceled) {
		o.cfg.Log.Error("record the released VM", "task", t.ID, "err", uerr)
	}
	return n, true, err
}

// holdsSlot reports whether the run counts against maxConcurrentVMs: it
// does unless its VM was released (and no fresh one is being leased).
func (r *run) holdsSlot() bool {
	if r.host {
		return false // a research subagent never has a VM
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runner == nil || r.lease != nil || r.fresh
}

// reserveSlot waits for a free agent slot for a run that gave its VM back,
// and takes it (fresh). The runner's hold says what it waits for.
func (o *Orchestrator) reserveSlot(ctx context.Context, r *run, runner *agent.Runner) error {
	said := ""
	for {
		limit := o.cfg.Settings().MaxConcurrentVMs
		o.mu.Lock()
		used := 0
		for _, other := range o.runs {
			if !other.planning && other != r && other.holdsSlot() {
				used++
			}
		}
		if used < limit {
			r.mu.Lock()
			r.fresh = true
			r.mu.Unlock()
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
		if why := fmt.Sprintf("resuming: waiting for a free agent slot for a fresh VM (%d of %d in use; Settings: maxConcurrentVMs)", used, limit); why != said {
			runner.Hold(why)
			said = why
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(checkHeldEvery):
		}
	}
}

// needsFreshVM reports whether a resume must lease a fresh VM first: the
// run has none, or its guest does not answer.
func (r *run) needsFreshVM() bool {
	if r.host {
		return false
	}
	_, l, _ := r.get()
	return l == nil || !l.Guest().Healthy()
}

// resumeInFreshVM releases the run's VM if it still has one (its guest
// does not answer), leases a fresh one, gives it the inputs and the kept
// outbox, and resumes the agent with instructions. It runs on its own
// goroutine: the task says what it waits for meanwhile.
func (o *Orchestrator) resumeInFreshVM(r *run, t store.Task, instructions string) {
	r.mu.Lock()
	ctx, runner, sid, plan := r.vmCtx, r.runner, r.sessionID, r.plan
	if r.resuming || ctx == nil {
		r.mu.Unlock()
		return
	}
	r.resuming = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.resuming, r.fresh = false, false
		r.mu.Unlock()
	}()
	sessionDir := o.cfg.Paths.Session(sid)
	if _, l, _ := r.get(); l != nil {
		if _, _, err := o.releaseVM(ctx, r, t, sessionDir, 0); err != nil {
			runner.Hold("could not release the VM whose guest does not answer: " + err.Error())
			return
		}
	}
	if err := o.reserveSlot(ctx, r, runner); err != nil {
		return
	}
	runner.Hold("resuming: starting a fresh VM")
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if ctx.Err() != nil {
		return
	}
	lease, err := o.cfg.Pool.Acquire(ctx, r.req)
	if err != nil {
		if ctx.Err() == nil {
			runner.Hold("could not start a fresh VM: " + err.Error() + "; resume to try again, or cancel")
		}
		return
	}
	shared := lease.Machine().Spec().SharedDir()
	kept, err := files.CarryIn(filepath.Join(carriedDir(sessionDir), files.Outbox), shared)
	if err == nil {
		err = o.copyInputs(ctx, t.ID, shared)
	}
	if err == nil {
		err = writeback.Carry(carriedDir(sessionDir), shared)
	}
	if err == nil {
		err = provision.Stage(plan, shared)
	}
	if err == nil {
		err = runner.Reprovision(ctx, lease.Guest())
	}
	if err != nil {
		lease.Release(background())
		runner.Hold("could not prepare the fresh VM: " + err.Error() + "; resume to try again, or cancel")
		return
	}
	o.attach(r, lease, runner)
	if _, err := o.update(t.ID, store.Update{Mutate: func(t *store.Task) error {
		if t.Status.Terminal() {
			return nil
		}
		t.VMID = lease.ID()
		return nil
	}}); err != nil {
		o.cfg.Log.Error("record the fresh VM", "task", t.ID, "err", err)
	}
	o.emitInfo(r, fmt.Sprintf("The task goes on in a fresh VM, %s, with its inputs and the %d outbox file(s) of the last one.", lease.ID(), kept))
	runner.VMReplaced(fmt.Sprintf("your VM was replaced by a fresh one from the template while the task was paused. The inbox and the %d file(s) you had saved in outbox/ are there; anything else you did in the old VM (open applications, workspace/, settings) is gone.", kept))
	runner.Resume(instructions)
}

// emitInfo records an info event of the system's in the task's activity.
func (o *Orchestrator) emitInfo(r *run, summary string) {
	if _, err := o.update(r.id, store.Update{Events: []store.Event{{Type: "status_change", ActivityType: "info", Summary: summary}}}); err != nil {
		o.cfg.Log.Error("record event", "task", r.id, "err", err)
	}
}
