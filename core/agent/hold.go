package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/store"
)

// Holds (issue 17.8): the system pauses a task, instead of ending it, when
// the user can still make it go on.
//   - A step or time limit reached, with Task.LimitGrace: the task waits
//     that long for the user to continue it (Extend, then Resume; without
//     Extend it gets its limit again); then it ends as before.
//   - A guest agent that stops answering while its VM runs: the task waits
//     for the user, who resumes it (the orchestrator gives it a fresh VM if
//     the old one still does not answer) or cancels it.
// The orchestrator may release the VM of a task held this way (Parkable)
// and give it a fresh one on resume (VMReplaced).

// GuestLost starts the reason of a task held for its guest.
const GuestLost = "lost touch with the VM's guest agent"

// ErrNoVM is what the guest answers while the task's VM is released.
var ErrNoVM = errors.New("the task has no VM at the moment (it was released while the task was paused)")

// guestWait is how long a step waits for a guest that went quiet to come
// back (or for its VM's failure to be known) before the task is held.
const guestWait = time.Second

// Hold pauses the task for a reason of the system's (the user's pauses
// are Pause and TakeOver).
func (r *Runner) Hold(reason string) {
	r.ctl.hold(reason)
	r.setStatus(store.StatusPaused, reason)
}

// IsPaused reports whether the task is paused (by the user or held).
func (r *Runner) IsPaused() bool { return r.ctl.isPaused() }

// Parkable reports whether the task is held by the system and waits at a
// safe point with nothing asked of the user, and since when: its VM may
// then be released.
func (r *Runner) Parkable() (since time.Time, ok bool) { return r.ctl.parkable() }

// VMReplaced tells the agent its VM is a new one (the next turn says so,
// with note); element ids of the old screen are forgotten.
func (r *Runner) VMReplaced(note string) { r.ctl.note(note) }

// Extend raises the limits of a task held at one: steps more steps, and d
// more time from now (or from its deadline, if later).
func (r *Runner) Extend(steps int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if steps > 0 {
		r.task.MaxIterations = max(r.steps, r.task.MaxIterations) + steps
	}
	if d > 0 {
		from := time.Now()
		if r.deadline.After(from) {
			from = r.deadline
		}
		r.setDeadlineLocked(from.Add(d))
	}
}

// setDeadlineLocked moves the time limit; the hard stop follows it by the
// grace.
func (r *Runner) setDeadlineLocked(t time.Time) {
	r.deadline = t
	if r.hard != nil {
		r.hard.Reset(time.Until(t) + r.task.LimitGrace)
	}
}

// limit says which limit the task has reached, "" for none.
func (r *Runner) limit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.steps >= r.task.MaxIterations:
		return "steps"
	case !r.deadline.IsZero() && time.Now().After(r.deadline):
		return "time"
	}
	return ""
}

// holdAtLimit holds a task at its limit for the grace and reports whether
// the user continued it.
func (r *Runner) holdAtLimit(ctx context.Context, which string) bool {
	r.mu.Lock()
	steps, timeout := r.task.MaxIterations, r.task.Timeout
	r.mu.Unlock()
	until := time.Now().Add(r.task.LimitGrace).Format("15:04")
	reason := fmt.Sprintf("reached its limit of %d steps: resume to continue for %d more (or give extraSteps), or cancel; it ends at %s otherwise", steps, r.baseSteps, until)
	if which == "time" {
		reason = fmt.Sprintf("reached its time limit of %s: resume to continue for %s more (or give extraMinutes), or cancel; it ends at %s otherwise", fmtMinutes(timeout), fmtMinutes(r.baseTimeout), until)
	}
	r.Hold(reason)
	wctx, cancel := context.WithTimeout(ctx, r.task.LimitGrace)
	defer cancel()
	if r.ctl.waitResumed(wctx) != nil {
		return false
	}
	// Resumed: a limit not raised by Extend is given again.
	r.mu.Lock()
	var more []string
	if r.steps >= r.task.MaxIterations {
		r.task.MaxIterations = r.steps + r.baseSteps
	}
	if time.Now().After(r.deadline) {
		r.setDeadlineLocked(time.Now().Add(r.baseTimeout))
	}
	more = append(more, fmt.Sprintf("%d more steps", r.task.MaxIterations-r.steps), fmtMinutes(time.Until(r.deadline))+" more time")
	r.mu.Unlock()
	r.ctl.note("The user continued the task past its limit: you have " + strings.Join(more, " and ") + ".")
	return true
}

func fmtMinutes(d time.Duration) string {
	if m := d.Round(time.Minute); m >= time.Minute {
		return fmt.Sprintf("%.0f min", m.Minutes())
	}
	return d.Round(time.Second).String()
}

// guestGone reports whether a failed guest call failed because the guest
// is out of reach (its VM released, or its agent not answering), waiting
// up to guestWait for it to come back.
func (r *Runner) guestGone(ctx context.Context, err error) bool {
	if errors.Is(err, ErrNoVM) {
		return true
	}
	h, ok := r.cfg.Guest.(interface{ Healthy() bool })
	if !ok {
		return false
	}
	deadline := time.Now().Add(guestWait)
	for !h.Healthy() {
		if time.Now().After(deadline) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// holdForGuest holds the task for a guest out of reach until the user
// resumes it, or the guest answers again while the task is still held for
// it (then it goes on by itself).
func (r *Runner) holdForGuest(ctx context.Context, err error) error {
	reason := GuestLost + " (" + truncate(err.Error(), 200) + "): resume to go on (a VM that still does not answer is replaced by a fresh one), or cancel"
	if errors.Is(err, ErrNoVM) {
		reason = "its VM was released while it was paused: resume to go on in a fresh VM, or cancel"
	}
	r.Hold(reason)
	h, _ := r.cfg.Guest.(interface{ Healthy() bool })
	for {
		wctx, cancel := context.WithTimeout(ctx, guestPoll)
		err := r.ctl.waitResumed(wctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if _, why := r.Status(); h != nil && h.Healthy() && why == reason && r.Resume("") {
			r.emit(r.Steps(), Event{Type: "status_change", ActivityType: "info", Summary: "The guest agent answers again: the task goes on."})
			return nil
		}
	}
}

// guestPoll is how often a task held for its guest looks whether it is back.
const guestPoll = 250 * time.Millisecond
