package vm

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/sandbox"
)

func newPool(t *testing.T, warm int) (*pool.Pool, *sandbox.Backend) {
	t.Helper()
	data := t.TempDir()
	b := newBackend(t, data)
	p, err := pool.New(pool.Config{
		Backend: b, Dir: data, Log: quiet(),
		Limits: func() pool.Limits {
			return pool.Limits{MaxConcurrent: 4, WarmSize: warm, IdleTimeout: time.Hour, CPUs: 1, MemoryMB: 1024,
				WarmTemplate: vm.Template{ID: "host", Kind: vm.KindHost}, WarmNetwork: vm.NetworkOffline}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		p.Close(context.Background())
	})
	return p, b
}

func agentPID(t *testing.T, l *pool.Lease) int {
	pid := l.Machine().(*sandbox.Machine).AgentPID()
	if pid == 0 {
		t.Fatal("no agent process")
	}
	return pid
}

// waitReady returns a ready VM of the pool other than not.
func waitReady(t *testing.T, p *pool.Pool, not string) pool.Info {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, i := range p.Snapshot() {
			if i.State == pool.StateReady && i.ID != not {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no ready VM (other than %q): %+v", not, p.Snapshot())
	return pool.Info{}
}

// TestPoolReplacesAWarmSandboxWhoseAgentDies: SIGKILL to a warm VM's guest
// agent gets that VM replaced by a fresh ready one within 5 s.
func TestPoolReplacesAWarmSandboxWhoseAgentDies(t *testing.T) {
	p, _ := newPool(t, 1)
	warm := waitReady(t, p, "")
	m, ok := p.Machine(warm.ID)
	if !ok {
		t.Fatal("warm VM not found")
	}
	pid := m.(*sandbox.Machine).AgentPID()
	if pid == 0 {
		t.Fatal("no agent process")
	}
	t0 := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	replacement := waitReady(t, p, warm.ID)
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("replaced after %s", d)
	}
	t.Logf("warm VM %s replaced by %s in %s", warm.ID, replacement.ID, time.Since(t0).Round(time.Millisecond))
}

// TestPoolTellsTheTaskWhenItsSandboxDies: SIGKILL to a leased VM's agent
// closes the lease's Lost channel with a reason within 5 s.
func TestPoolTellsTheTaskWhenItsSandboxDies(t *testing.T) {
	p, _ := newPool(t, 0)
	l, err := p.Acquire(context.Background(), pool.Request{TaskID: "t", Template: vm.Template{ID: "host", Kind: vm.KindHost}, Network: vm.NetworkOffline})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	t0 := time.Now()
	syscall.Kill(agentPID(t, l), syscall.SIGKILL)
	select {
	case <-l.Lost():
		if !strings.Contains(l.LostReason(), "stopped unexpectedly") {
			t.Fatalf("reason = %q", l.LostReason())
		}
		t.Logf("task told in %s: %s", time.Since(t0).Round(time.Millisecond), l.LostReason())
	case <-time.After(5 * time.Second):
		t.Fatal("the task was not told within 5 s")
	}
}
