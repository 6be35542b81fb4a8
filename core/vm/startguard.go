package vm

import (
	"context"
	"fmt"
	"sync"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// StartGuard is what every backend's machine needs so that Stop and
// Delete can end a Start in progress (a pool letting go of a VM that is
// still booting) and no Start follows a Delete. The zero value is ready;
// it is safe for concurrent use.
type StartGuard struct {
	// mu guards everything below.
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{} // closed when the Start in progress ends
	deleted bool
}

// Begin records a Start of machine id. The start must follow the returned
// context and call end when it is over (whatever the outcome). After
// Delete, Begin fails with an error of class not found.
func (g *StartGuard) Begin(ctx context.Context, id string) (_ context.Context, end func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, nil, errdefs.NotFoundf("machine %s was deleted", id)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	g.cancel, g.done = cancel, done
	return ctx, func() {
		g.mu.Lock()
		if g.done == done {
			g.cancel, g.done = nil, nil
		}
		g.mu.Unlock()
		cancel()
		close(done)
	}, nil
}

// Abort cancels a Start in progress, if any, and waits until it has
// ended (undoing what it set up, or leaving a running machine for the
// caller to stop), or until ctx ends.
func (g *StartGuard) Abort(ctx context.Context) error {
	g.mu.Lock()
	cancel, done := g.cancel, g.done
	g.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("a start in progress did not end: %w", ctx.Err())
	}
}

// Delete refuses every later Start and aborts one in progress.
func (g *StartGuard) Delete(ctx context.Context) error {
	g.mu.Lock()
	g.deleted = true
	g.mu.Unlock()
	return g.Abort(ctx)
}
