package vm_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
)

// TestDialContext answers issue 16.8 (DialGuest ignores its context): the
// macOS framework's vsock connect takes no context, so a guest that never
// accepts would hold the caller (a task's start, the pool's health checks)
// for as long as the framework waits. DialContext returns when ctx ends,
// and the connection that arrives later is closed, not leaked.
func TestDialContext(t *testing.T) {
	// A dial that answers: its connection is returned.
	a, b := net.Pipe()
	defer b.Close()
	c, err := vm.DialContext(context.Background(), func() (net.Conn, error) { return a, nil })
	if err != nil || c != a {
		t.Fatalf("dial: %v %v", c, err)
	}
	c.Close()

	// A dial that fails: its error.
	boom := errors.New("connection refused")
	if _, err := vm.DialContext(context.Background(), func() (net.Conn, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failed dial: %v", err)
	}

	// A dial that blocks past the deadline: the caller is back at the
	// deadline, and the late connection is closed.
	release := make(chan struct{})
	late, peer := net.Pipe()
	defer peer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = vm.DialContext(ctx, func() (net.Conn, error) { <-release; return late, nil })
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("blocked dial: %v after %v", err, time.Since(start))
	}
	close(release)
	peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := peer.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Fatalf("the late connection was not closed: %v", err)
	}

	// A context already over: no dial at all.
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := vm.DialContext(done, func() (net.Conn, error) { t.Error("dialled"); return nil, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
