package pool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
)

func TestAdmissionWaitsWithAReason(t *testing.T) {
	h := newPool(t, limits(2, 0), nil, nil)
	ctx := context.Background()
	a, _ := h.p.Acquire(ctx, Request{TaskID: "a", Template: hostTmpl})
	b, _ := h.p.Acquire(ctx, Request{TaskID: "b", Template: hostTmpl})
	reasons := make(chan string, 4)
	got := make(chan *Lease, 1)
	go func() {
		l, err := h.p.Acquire(ctx, Request{TaskID: "c", Template: hostTmpl, OnWait: func(r string) { reasons <- r }})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case r := <-reasons:
		if !strings.Contains(r, "2 of 2 in use") {
			t.Fatalf("reason = %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the third request did not report waiting")
	}
	select {
	case <-got:
		t.Fatal("a third VM started past the cap")
	case <-time.After(200 * time.Millisecond):
	}
	a.Release(ctx)
	select {
	case c := <-got:
		c.Release(ctx)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request did not proceed after a release")
	}
	b.Release(ctx)

	// Memory is a cap too.
	h.setLimits(func(l *Limits) { l.MemoryMB = 40 << 10 }) // two of these exceed the 64 GB host
	x, _ := h.p.Acquire(ctx, Request{Template: hostTmpl})
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var reason string
	_, err := h.p.Acquire(wctx, Request{Template: hostTmpl, OnWait: func(r string) { reason = r }})
	if err == nil || !strings.Contains(reason, "waiting for memory") {
		t.Fatalf("memory cap: err=%v reason=%q", err, reason)
	}
	x.Release(ctx)
}

// TestSharedMemoryAdmission: a backend whose machines share the host's
// memory (sandboxes: the size is a cgroup limit) starts machines whose caps
// add up past the host's memory while the host has memory available, and
// waits, saying so, once what is available falls under the reserve.
func TestSharedMemoryAdmission(t *testing.T) {
	var avail atomic.Int64
	avail.Store(8 << 10)
	b := fake.New(fake.Options{SharedMemory: true})
	h := newPool(t, limits(8, 0), b, func(c *Config) {
		c.HostMemoryMB, c.ReserveMB = 4<<10, 1<<10
		c.AvailableMemoryMB = func() int { return int(avail.Load()) }
	})
	h.setLimits(func(l *Limits) { l.MemoryMB = 2 << 10 })
	ctx := context.Background()
	var held []*Lease
	for range 4 { // 8 GB of caps on a 4 GB host: overcommitted 2×
		l, err := h.p.Acquire(ctx, Request{Template: hostTmpl})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	// Past 4× the host's memory in caps, a fifth one waits.
	h.setLimits(func(l *Limits) { l.MemoryMB = 9 << 10 })
	waitsFor(t, h, "overcommitted", "waiting for memory: running sandboxes may use up to 8192 MB together and this one 9216 MB more, over 4× this host's 4096 MB")
	h.setLimits(func(l *Limits) { l.MemoryMB = 2 << 10 })
	avail.Store(900)
	waitsFor(t, h, "low memory", "waiting for memory: the host has 900 MB available, under the 1024 MB kept free for the rest of it")
	avail.Store(2 << 10)
	l, err := h.p.Acquire(ctx, Request{Template: hostTmpl})
	if err != nil {
		t.Fatalf("memory available again: %v", err)
	}
	for _, x := range append(held, l) {
		x.Release(ctx)
	}
}

// TestCappedMemoryAdmission: when the backend caps its machines' memory
// together (below the host's, less the reserve), their caps may add up to
// any multiple of the host's memory: admission waits only while what the
// host has available is under the reserve.
func TestCappedMemoryAdmission(t *testing.T) {
	var avail atomic.Int64
	avail.Store(2 << 10)
	b := fake.New(fake.Options{SharedMemory: true, MemoryCapped: true})
	h := newPool(t, limits(8, 0), b, func(c *Config) {
		c.HostMemoryMB, c.ReserveMB = 1<<10, 512
		c.AvailableMemoryMB = func() int { return int(avail.Load()) }
	})
	h.setLimits(func(l *Limits) { l.MemoryMB = 3 << 10 })
	ctx := context.Background()
	var held []*Lease
	for i := range 3 { // 9 GB of caps on a 1 GB host: 9×
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := h.p.Acquire(actx, Request{Template: hostTmpl, OnWait: func(r string) { t.Logf("machine %d: %s", i+1, r) }})
		cancel()
		if err != nil {
			t.Fatalf("machine %d of 3 GB on a 1 GB host with 2 GB available: %v", i+1, err)
		}
		held = append(held, l)
	}
	defer func() {
		for _, x := range held {
			x.Release(ctx)
		}
	}()
	avail.Store(500)
	waitsFor(t, h, "low memory", "waiting for memory: the host has 500 MB available, under the 512 MB kept free for the rest of it")
}

// waitsFor asks h's pool for a VM of hostTmpl for 500 ms and fails the test
// unless the request waited, for the reason want.
func waitsFor(t *testing.T, h *harness, what, want string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var reason string
	if _, err := h.p.Acquire(wctx, Request{Template: hostTmpl, OnWait: func(r string) { reason = r }}); err == nil || reason != want {
		t.Fatalf("%s: err=%v reason=%q, want %q", what, err, reason, want)
	}
}

// TestLeakedHostSlot: the host refuses a start although the pool runs fewer
// VMs than the host limit; the wait says another app holds a slot, and the
// request proceeds once the slot is free.
func TestLeakedHostSlot(t *testing.T) {
	b := fake.New(fake.Options{MaxRunning: 2})
	h := newPool(t, limits(2, 0), b, nil)
	ctx := context.Background()
	outsider, _ := b.Create(ctx, vm.Spec{ID: "outsider", Dir: t.TempDir() + "/o", Template: hostTmpl})
	outsider.Start(ctx)
	a, err := h.p.Acquire(ctx, Request{Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	reasons := make(chan string, 4)
	got := make(chan error, 1)
	go func() {
		l, err := h.p.Acquire(ctx, Request{Template: hostTmpl, OnWait: func(r string) { reasons <- r }})
		if err == nil {
			l.Release(ctx)
		}
		got <- err
	}()
	select {
	case r := <-reasons:
		if !strings.Contains(r, "another app holds a slot") {
			t.Fatalf("reason = %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reason given")
	}
	outsider.Delete(ctx)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	a.Release(ctx)
}

// TestBootsTakeTurns: six VMs asked for at once boot at most MaxBooting at
// a time, so that a crowd of boots cannot starve one another, and all six
// come up.
func TestBootsTakeTurns(t *testing.T) {
	const ready = 300 * time.Millisecond
	b := fake.New(fake.Options{ReadyDelay: ready})
	h := newPool(t, limits(6, 0), b, func(c *Config) { c.MaxBooting = 2 })
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			l, err := h.p.Acquire(ctx, Request{TaskID: fmt.Sprint("t", i), Template: hostTmpl, Network: vm.NetworkOffline})
			if err == nil {
				defer l.Release(ctx)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 3*ready {
		t.Fatalf("six boots of %s each took %s with two at a time: more than two booted at once", ready, took)
	}
}
