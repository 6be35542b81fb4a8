package pool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
)

// TestHostSlotsCount answers issue 16.8: a macOS installer or a template
// booted for its setup runs outside the pool but holds one of the host's
// two macOS VM slots. Its slot counts against the caps: with one held, a
// second task VM waits with the reason instead of being refused by the
// host (here the fake backend's limit of 2, as macOS has), and proceeds
// when the slot is given back; a slot waits for room like a VM does.
func TestHostSlotsCount(t *testing.T) {
	b := fake.New(fake.Options{MaxRunning: 2})
	h := newPool(t, limits(2, 0), b, nil)
	ctx := context.Background()
	release, err := h.p.ReserveSlot(ctx, "the setup of template mac", 4, 8192, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The setup's machine really runs outside the pool, taking a host slot.
	setup, _ := b.Create(ctx, vm.Spec{ID: "setup-mac", Dir: t.TempDir() + "/s", Template: hostTmpl})
	if err := setup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := h.p.Acquire(ctx, Request{TaskID: "a", Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	reasons := make(chan string, 4)
	got := make(chan error, 1)
	go func() {
		l, err := h.p.Acquire(ctx, Request{TaskID: "b", Template: hostTmpl, OnWait: func(r string) { reasons <- r }})
		if err == nil {
			l.Release(ctx)
		}
		got <- err
	}()
	select {
	case r := <-reasons:
		if !strings.Contains(r, "2 of 2 in use") {
			t.Fatalf("reason = %q, want the slot counted", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second task did not wait")
	}
	select {
	case err := <-got:
		t.Fatalf("a VM started past the host limit: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := h.p.ReserveSlot(ctx, "the setup of template mac", 1, 1024, nil); err == nil {
		t.Fatal("the same slot was held twice")
	}
	setup.Stop(ctx)
	release()
	release() // a second release changes nothing
	if err := <-got; err != nil {
		t.Fatalf("after the slot was released: %v", err)
	}

	// A slot waits for room, with a reason, and ends with its context.
	var reason string
	wctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	c, err := h.p.Acquire(ctx, Request{TaskID: "c", Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.p.ReserveSlot(wctx, "the macOS installer", 1, 1024, func(r string) { reason = r }); err == nil || !strings.Contains(reason, "2 of 2 in use") {
		t.Fatalf("slot past the cap: %v, reason %q", err, reason)
	}
	a.Release(ctx)
	c.Release(ctx)
}

// TestHostSlotRetiresAWarmVM: a warm VM nobody uses gives its slot up to a
// setup or an installer, as it does for a task of another kind.
func TestHostSlotRetiresAWarmVM(t *testing.T) {
	b := fake.New(fake.Options{MaxRunning: 2})
	h := newPool(t, limits(2, 2), b, nil)
	h.run()
	waitFor(t, "two warm VMs", func() bool { return count(h.p, StateReady) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := h.p.ReserveSlot(ctx, "the setup of template mac", 1, 1024, nil)
	if err != nil {
		t.Fatalf("no slot though a warm VM could go: %v", err)
	}
	defer release()
	h.p.mu.Lock()
	n, _, _ := h.p.usageLocked()
	h.p.mu.Unlock()
	if n > 2 {
		t.Fatalf("%d slots in use past the limit of 2", n)
	}
}
