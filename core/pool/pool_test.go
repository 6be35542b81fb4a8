package pool

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
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
