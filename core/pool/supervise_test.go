package pool

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func TestCrashedWarmVMIsReplaced(t *testing.T) {
	b := fake.New(fake.Options{})
	h := newPool(t, limits(2, 1), b, nil)
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	old := h.p.Snapshot()[0].ID
	b.Machine(old).Crash()
	t0 := time.Now()
	waitFor(t, "a replacement", func() bool {
		s := h.p.Snapshot()
		return len(s) == 1 && s[0].ID != old && s[0].State == StateReady
	})
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("replaced after %s", d)
	}
}

func TestCrashedLeasedVMTellsTheTask(t *testing.T) {
	b := fake.New(fake.Options{})
	h := newPool(t, limits(2, 0), b, nil)
	l, err := h.p.Acquire(context.Background(), Request{TaskID: "t", Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	b.Machine(l.ID()).Crash()
	select {
	case <-l.Lost():
		if !strings.Contains(l.LostReason(), "stopped unexpectedly") {
			t.Fatalf("reason = %q", l.LostReason())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the task was not told")
	}
	if s := h.p.Snapshot(); len(s) != 1 || s[0].State != StateError {
		t.Fatalf("snapshot = %+v", s)
	}
	l.Release(context.Background())
}

// TestLeaseHearsItsGuest: the lease holder gets the guest's notifications
// (live shell output) while it asks for them, and not after.
func TestLeaseHearsItsGuest(t *testing.T) {
	h := newPool(t, limits(1, 0), nil, nil)
	ctx := context.Background()
	l, err := h.p.Acquire(ctx, Request{TaskID: "t", Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	var mu sync.Mutex
	var heard []string
	l.OnNotify(func(method string, params json.RawMessage) {
		mu.Lock()
		heard = append(heard, method+" "+string(params))
		mu.Unlock()
	})
	if _, err := l.Guest().Shell(ctx, protocol.ShellParams{Command: "echo hello-from-guest"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell output notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) > 0 && strings.Contains(strings.Join(heard, "\n"), "hello-from-guest")
	})
	mu.Lock()
	if !strings.HasPrefix(heard[0], protocol.NotifyShellOutput+" ") {
		t.Errorf("heard %q", heard)
	}
	n := len(heard)
	mu.Unlock()
	l.OnNotify(nil)
	if _, err := l.Guest().Shell(ctx, protocol.ShellParams{Command: "echo again"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != n {
		t.Errorf("heard after OnNotify(nil): %q", heard[n:])
	}
}
