package pool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func TestWarmPoolServesWithoutBooting(t *testing.T) {
	h := newPool(t, limits(2, 1), nil, nil)
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	warmID := h.p.Snapshot()[0].ID
	t0 := time.Now()
	l, err := h.p.Acquire(context.Background(), Request{TaskID: "t", Template: hostTmpl, Network: vm.NetworkOffline})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() != warmID {
		t.Fatalf("leased %s, not the warm %s", l.ID(), warmID)
	}
	t.Logf("warm acquire took %s", time.Since(t0))
	// The pool refills itself.
	waitFor(t, "a new warm VM", func() bool { return count(h.p, StateReady) == 1 })
	// A request of another kind does not take the warm VM.
	l2, err := h.p.Acquire(context.Background(), Request{TaskID: "t2", Template: hostTmpl, Network: vm.NetworkInternet})
	if err != nil {
		t.Fatal(err)
	}
	if l2.Machine().Spec().Network != vm.NetworkInternet {
		t.Fatal("an internet request got an offline VM")
	}
	l.Release(context.Background())
	l2.Release(context.Background())
}

// TestWarmVMIsReadyOnceItsDesktopIs: a VM kept warm is ready only once
// its guest's desktop is fully up (what it brings up after the first
// hello, as a Linux sandbox's AT-SPI), so that the task that takes it
// finds nothing still starting; a VM booted for a task does not wait for
// that before it is leased.
func TestWarmVMIsReadyOnceItsDesktopIs(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	b := fake.New(fake.Options{Warm: func(ctx context.Context) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	h := newPool(t, limits(2, 1), b, nil)
	h.run()
	waitFor(t, "a warm VM booting", func() bool { return count(h.p, StateBooting) == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := count(h.p, StateReady); n != 0 {
		t.Fatalf("%d warm VMs ready while their desktop was still coming up", n)
	}

	// A task's own VM is leased without waiting.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := h.p.Acquire(ctx, Request{TaskID: "t", Template: hostTmpl, Network: vm.NetworkInternet})
	if err != nil {
		t.Fatalf("a task's VM while the warm one's desktop comes up: %v", err)
	}
	defer l.Release(context.Background())

	releaseOnce.Do(func() { close(release) })
	waitFor(t, "the warm VM ready once its desktop is", func() bool { return count(h.p, StateReady) == 1 })
}

// TestWarmVMWhoseDesktopNeverComesUpIsDropped: a guest that answers
// hello but never ready (a hostile or broken one) holds a warm boot for
// ReadyTimeout at most: the VM is then deleted, never offered to a task,
// and the pool does not hang on it.
func TestWarmVMWhoseDesktopNeverComesUpIsDropped(t *testing.T) {
	b := fake.New(fake.Options{Warm: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	h := newPool(t, limits(2, 1), b, func(c *Config) { c.ReadyTimeout = 300 * time.Millisecond })
	h.run()
	waitFor(t, "a warm boot to start", func() bool { return count(h.p, StateBooting) == 1 })
	first := h.p.Snapshot()[0].ID
	waitFor(t, "the stuck warm VM to be dropped", func() bool {
		for _, i := range h.p.Snapshot() {
			if i.ID == first {
				return false
			}
		}
		return true
	})
	if n := count(h.p, StateReady); n != 0 {
		t.Fatalf("%d warm VMs offered whose desktop never came up", n)
	}
	if b.Machine(first) != nil {
		t.Fatalf("the dropped warm VM %s was not deleted", first)
	}
}

func TestIdleWarmVMsRetire(t *testing.T) {
	h := newPool(t, limits(2, 1), nil, nil)
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	h.setLimits(func(l *Limits) { l.IdleTimeout = 10 * time.Millisecond })
	waitFor(t, "the idle VM to retire", func() bool { return len(h.p.Snapshot()) == 0 })
}

// TestWarmVMIsSavedAndRestored (issue 16.7): where the backend can save a
// running VM (macOS 14+ guests), a warm VM is saved to disk once it has
// booted, so that it holds no host VM slot while it waits: with a host
// limit of 1, a task of another kind still gets a VM. The next task of
// its kind restores it (no boot) and drives its guest; the pool refills.
func TestWarmVMIsSavedAndRestored(t *testing.T) {
	b := fake.New(fake.Options{SaveRestore: true, MaxRunning: 1})
	h := newPool(t, limits(2, 1), b, nil)
	h.run()
	waitFor(t, "a warm VM saved to disk", func() bool { return count(h.p, StateSuspended) == 1 })
	warm := h.p.Snapshot()[0]
	if _, err := os.Stat(filepath.Join(warm.Dir, "warm.vzvmsave")); err != nil {
		t.Fatalf("no saved state: %v", err)
	}
	if m := b.Machine(warm.ID); m.Status().State != vm.StateStopped {
		t.Fatalf("the saved VM is %s, want stopped", m.Status().State)
	}
	// Saved, it holds no host slot: an internet VM boots beside it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	other, err := h.p.Acquire(ctx, Request{TaskID: "other", Template: hostTmpl, Network: vm.NetworkInternet})
	if err != nil {
		t.Fatalf("a VM of another kind beside a saved warm VM: %v", err)
	}
	other.Release(context.Background())
	l, err := h.p.Acquire(ctx, Request{TaskID: "t", Template: hostTmpl, Network: vm.NetworkOffline})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() != warm.ID {
		t.Fatalf("leased %s, not the saved warm %s", l.ID(), warm.ID)
	}
	if saves, restores := b.SavesAndRestores(); saves < 1 || restores != 1 {
		t.Fatalf("saves %d, restores %d; want the warm VM saved and restored once", saves, restores)
	}
	if _, err := l.Guest().Screenshot(ctx, protocol.ScreenshotParams{}); err != nil {
		t.Fatalf("the restored VM's guest: %v", err)
	}
	for _, i := range h.p.Snapshot() {
		if i.ID == warm.ID && i.State != StateBusy {
			t.Fatalf("the restored VM is %s, want busy", i.State)
		}
	}
	h.rec.mu.Lock()
	states := slices.Clone(h.rec.states[warm.ID])
	h.rec.mu.Unlock()
	if !slices.Contains(states, StateSuspending) || !slices.Contains(states, StateSuspended) {
		t.Errorf("recorded states %v: want suspending and suspended", states)
	}
	l.Release(context.Background())
	waitFor(t, "the pool refilled and saved", func() bool { return count(h.p, StateSuspended) == 1 })
}

// TestWarmVMThatCannotBeSavedStaysRunning: a save that fails (a
// configuration VZ refuses) discards that VM once; warm VMs then stay
// running instead of booting and failing to save again and again.
func TestWarmVMThatCannotBeSavedStaysRunning(t *testing.T) {
	b := fake.New(fake.Options{SaveRestore: true, SaveErr: errors.New("configuration does not support save")})
	h := newPool(t, limits(2, 1), b, nil)
	h.run()
	waitFor(t, "a running warm VM", func() bool { return count(h.p, StateReady) == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := count(h.p, StateReady); n != 1 || len(h.p.Snapshot()) != 1 {
		t.Fatalf("after a failed save: %+v", h.p.Snapshot())
	}
	if saves, _ := b.SavesAndRestores(); saves != 0 {
		t.Fatalf("%d saves", saves)
	}
	l, err := h.p.Acquire(context.Background(), Request{TaskID: "t", Template: hostTmpl})
	if err != nil {
		t.Fatal(err)
	}
	l.Release(context.Background())
}
