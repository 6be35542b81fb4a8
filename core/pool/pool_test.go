package pool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var hostTmpl = vm.Template{ID: "host", Kind: vm.KindHost}

type recorder struct {
	mu     sync.Mutex
	states map[string][]State
}

func (r *recorder) RecordVM(_ context.Context, i Info) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.states == nil {
		r.states = map[string][]State{}
	}
	r.states[i.ID] = append(r.states[i.ID], i.State)
	return nil
}
func (r *recorder) ForgetVM(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states[id] = append(r.states[id], "forgotten")
	return nil
}

type harness struct {
	p    *Pool
	b    *fake.Backend
	rec  *recorder
	stop context.CancelFunc
	// limMu guards lim, which tests change while the pool reads it.
	limMu sync.Mutex
	lim   Limits
}

func (h *harness) limits() Limits {
	h.limMu.Lock()
	defer h.limMu.Unlock()
	return h.lim
}

func (h *harness) setLimits(f func(*Limits)) {
	h.limMu.Lock()
	defer h.limMu.Unlock()
	f(&h.lim)
}

func newPool(t *testing.T, lim Limits, b *fake.Backend, mutate func(*Config)) *harness {
	t.Helper()
	if b == nil {
		b = fake.New(fake.Options{})
	}
	h := &harness{b: b, rec: &recorder{}, lim: lim}
	cfg := Config{Backend: b, Dir: t.TempDir(), Limits: h.limits, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Recorder: h.rec, HostMemoryMB: 64 << 10, RetryEvery: 200 * time.Millisecond, LostAfter: time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
		}
		p.Close(context.Background())
	})
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.p.Run(ctx); close(done) }()
	h.stop = func() { cancel(); <-done }
}

func limits(max, warm int) Limits {
	return Limits{MaxConcurrent: max, WarmSize: warm, IdleTimeout: time.Hour, CPUs: 1, MemoryMB: 1024,
		WarmTemplate: hostTmpl, WarmNetwork: vm.NetworkOffline}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func count(p *Pool, s State) int {
	n := 0
	for _, i := range p.Snapshot() {
		if i.State == s {
			n++
		}
	}
	return n
}

func TestColdAcquireAndRelease(t *testing.T) {
	h := newPool(t, limits(2, 0), nil, nil)
	ctx := context.Background()
	l, err := h.p.Acquire(ctx, Request{TaskID: "t1", Template: hostTmpl, Network: vm.NetworkOffline})
	if err != nil {
		t.Fatal(err)
	}
	if l.Guest().Hello().ProtocolVersion != protocol.Version {
		t.Fatalf("hello = %+v", l.Guest().Hello())
	}
	snap := h.p.Snapshot()
	if len(snap) != 1 || snap[0].State != StateBusy || snap[0].TaskID != "t1" {
		t.Fatalf("snapshot = %+v", snap)
	}
	dir := l.Machine().Spec().Dir
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("VM folder left after release: %v", err)
	}
	if len(h.p.Snapshot()) != 0 {
		t.Fatalf("snapshot after release = %+v", h.p.Snapshot())
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	states := h.rec.states[l.ID()]
	if len(states) < 3 || states[0] != StateBooting || states[len(states)-1] != "forgotten" {
		t.Fatalf("recorded states %v", states)
	}
}

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
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var reason string
	if _, err := h.p.Acquire(wctx, Request{Template: hostTmpl, OnWait: func(r string) { reason = r }}); err == nil ||
		reason != "waiting for memory: running sandboxes may use up to 8192 MB together and this one 9216 MB more, over 4× this host's 4096 MB" {
		t.Fatalf("overcommitted: err=%v reason=%q", err, reason)
	}
	h.setLimits(func(l *Limits) { l.MemoryMB = 2 << 10 })
	avail.Store(900)
	wctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := h.p.Acquire(wctx, Request{Template: hostTmpl, OnWait: func(r string) { reason = r }}); err == nil ||
		reason != "waiting for memory: the host has 900 MB available, under the 1024 MB kept free for the rest of it" {
		t.Fatalf("low memory: err=%v reason=%q", err, reason)
	}
	avail.Store(2 << 10)
	l, err := h.p.Acquire(ctx, Request{Template: hostTmpl})
	if err != nil {
		t.Fatalf("memory available again: %v", err)
	}
	for _, x := range append(held, l) {
		x.Release(ctx)
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

func TestIdleWarmVMsRetire(t *testing.T) {
	h := newPool(t, limits(2, 1), nil, nil)
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	h.setLimits(func(l *Limits) { l.IdleTimeout = 10 * time.Millisecond })
	waitFor(t, "the idle VM to retire", func() bool { return len(h.p.Snapshot()) == 0 })
}

// TestCloseEndsBootsAtOnce: closing the pool while a started VM's guest is
// not answering yet ends the boot at once instead of waiting out the ready
// timeout.
func TestCloseEndsBootsAtOnce(t *testing.T) {
	b := fake.New(fake.Options{ReadyDelay: time.Hour})
	h := newPool(t, limits(2, 1), b, nil)
	h.run()
	waitFor(t, "a booting VM", func() bool { return count(h.p, StateBooting) == 1 })
	t0 := time.Now()
	h.stop() // Run returns although its refill is booting
	h.stop = nil
	if err := h.p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("stopping the pool took %s with a VM booting", d)
	}
}

// TestAllowlistIsPartOfTheVM: internet-mode VMs boot with the settings'
// egress allowlist, and a warm VM booted under another list is not
// leased once the list changes (it would reach what the user no longer
// allows, or miss what they now do).
func TestAllowlistIsPartOfTheVM(t *testing.T) {
	h := newPool(t, limits(2, 1), nil, func(c *Config) {})
	h.setLimits(func(l *Limits) { l.WarmNetwork, l.AllowHosts = vm.NetworkInternet, []string{"nas.local"} })
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	warm := h.p.Snapshot()[0]
	if !slices.Equal(warm.AllowHosts, []string{"nas.local"}) {
		t.Fatalf("the warm VM allows %v", warm.AllowHosts)
	}
	h.setLimits(func(l *Limits) { l.AllowHosts = []string{"10.8.0.0/16"} })
	l, err := h.p.Acquire(context.Background(), Request{TaskID: "t", Template: h.limits().WarmTemplate, Network: vm.NetworkInternet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	if l.ID() == warm.ID || !slices.Equal(l.Machine().Spec().AllowHosts, []string{"10.8.0.0/16"}) {
		t.Fatalf("leased %s allowing %v after the list changed (the warm VM was %s)", l.ID(), l.Machine().Spec().AllowHosts, warm.ID)
	}
}

// TestTaskAllowlistGetsItsOwnVM: a task's own allowHosts are added to the
// settings' list: its VM boots with both and the warm VM (settings' list
// only) is not leased for it, but is to the next task that asks nothing.
func TestTaskAllowlistGetsItsOwnVM(t *testing.T) {
	h := newPool(t, limits(3, 1), nil, func(c *Config) {})
	h.setLimits(func(l *Limits) { l.WarmNetwork, l.AllowHosts = vm.NetworkInternet, []string{"nas.local"} })
	h.run()
	waitFor(t, "a warm VM", func() bool { return count(h.p, StateReady) == 1 })
	warm := h.p.Snapshot()[0]
	ctx := context.Background()
	tmpl := h.limits().WarmTemplate
	l, err := h.p.Acquire(ctx, Request{TaskID: "wide", Template: tmpl, Network: vm.NetworkInternet, AllowHosts: []string{"deb.debian.org", "nas.local"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.ID() == warm.ID || !slices.Equal(l.Machine().Spec().AllowHosts, []string{"deb.debian.org", "nas.local"}) {
		t.Fatalf("the task with its own hosts leased %s allowing %v (the warm VM was %s)", l.ID(), l.Machine().Spec().AllowHosts, warm.ID)
	}
	defer l.Release(ctx)
	plain, err := h.p.Acquire(ctx, Request{TaskID: "plain", Template: tmpl, Network: vm.NetworkInternet})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Release(ctx)
	if plain.ID() != warm.ID || !slices.Equal(plain.Machine().Spec().AllowHosts, []string{"nas.local"}) {
		t.Fatalf("a plain task leased %s allowing %v, not the warm VM %s", plain.ID(), plain.Machine().Spec().AllowHosts, warm.ID)
	}
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
