package vm

import (
	"context"
	"fmt"
	"time"
)

// StopPolicy says how a machine is stopped, by what becomes of its disk.
type StopPolicy int

const (
	// Discard: the disk is deleted next (a task's clone, a warm VM). The
	// power is cut at once: a clean shutdown would only cost time, and on
	// macOS a host slot (a macOS guest asked to stop shows a "shut down?"
	// dialog and waits out the grace period).
	Discard StopPolicy = iota
	// Keep: the disk is kept (a template booted for its setup, a VM
	// sealed into a template). The guest OS shuts down cleanly, so that
	// its writes reach the disk.
	Keep
)

func (p StopPolicy) String() string {
	if p == Keep {
		return "keep"
	}
	return "discard"
}

// Halter is implemented by machines that can cut their power at once
// (without asking the guest). Machines without it are stopped with Stop.
type Halter interface {
	Halt(ctx context.Context) error
}

// GuestShutdowner is implemented by machines whose guest OS only shuts
// down cleanly from inside, through its guest agent's shutdown method: a
// macOS guest's RequestStop is the power button, which shows a dialog.
type GuestShutdowner interface {
	ShutsDownFromGuest() bool
}

// How StopAs stopped a machine.
const (
	StoppedByHalt  = "halted"
	StoppedByGuest = "shut down by its guest"
	StoppedByStop  = "stopped"
)

// StopAs stops m by policy and says how. Discard halts a Halter, else
// Stops it. Keep, for a GuestShutdowner with askGuest given, asks the
// guest to shut down (askGuest: the guest agent's shutdown method) and
// waits up to grace for the machine to exit; when the guest cannot be
// asked or does not go down in time, Stop (the backend's own graceful
// stop, then force) is the fallback. Every other machine is Stopped.
func StopAs(ctx context.Context, m Machine, p StopPolicy, askGuest func(context.Context) error, grace time.Duration) (string, error) {
	if p == Discard {
		if h, ok := m.(Halter); ok {
			return StoppedByHalt, h.Halt(ctx)
		}
		return StoppedByStop, m.Stop(ctx)
	}
	gs, ok := m.(GuestShutdowner)
	if !ok || !gs.ShutsDownFromGuest() || askGuest == nil {
		return StoppedByStop, m.Stop(ctx)
	}
	exited := m.Exited()
	select {
	case <-exited:
		return StoppedByStop, nil // not running
	default:
	}
	why := ""
	actx, cancel := context.WithTimeout(ctx, min(grace, 10*time.Second))
	err := askGuest(actx)
	cancel()
	if err != nil {
		why = fmt.Sprintf("the guest agent could not shut it down (%v)", err)
	} else {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return StoppedByGuest, nil
		case <-t.C:
			why = fmt.Sprintf("the guest was still running %s after its agent began the shutdown", grace)
		case <-ctx.Done():
			why = "the stop was cut short"
		}
	}
	if err := m.Stop(ctx); err != nil {
		return StoppedByStop, fmt.Errorf("%s; stop: %w", why, err)
	}
	return StoppedByStop + " (" + why + ")", nil
}
