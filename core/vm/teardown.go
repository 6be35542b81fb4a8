package vm

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// The stop and delete scaffolding every backend's machine shares; what
// differs (how a guest is asked to stop, how it is killed, what a machine
// holds on the host) stays in the backend.

// AlreadyExited is the Exited channel of a machine that has not started:
// closed already.
func AlreadyExited() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// WaitExit waits up to d, or until ctx ends, for exited to close, and
// says whether it did.
func WaitExit(ctx context.Context, exited <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// DeleteMachine is a machine's Delete: starts refuses every later Start
// and ends one in progress, stop stops the machine (its Stop, or Halt for
// a disk about to go), undo gives back what it holds on the host, and its
// folder dir is removed. Errors other than stop's name the machine as
// what ("sandbox ID").
func DeleteMachine(ctx context.Context, starts *StartGuard, what string, stop func(context.Context) error, undo func() error, dir string) error {
	if err := starts.Delete(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	if err := stop(ctx); err != nil {
		return err
	}
	if undo != nil {
		if err := undo(); err != nil {
			return fmt.Errorf("delete %s: %w", what, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete %s: %w", what, err)
	}
	return nil
}

// DialSocket is DialGuest for a machine whose guest agent listens on the
// unix socket path: ErrNotRunning unless m runs, else the connection, or
// an error of class unavailable.
func DialSocket(ctx context.Context, m Machine, path string) (net.Conn, error) {
	if m.Status().State != StateRunning {
		return nil, ErrNotRunning
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, errdefs.Unavailablef("dial the guest agent of %s: %v", m.Spec().ID, err)
	}
	return conn, nil
}
