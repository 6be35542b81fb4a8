// Package vmtest is the conformance suite every VM backend runs: the
// lifecycle of vm.Machine (create, start, reach the guest, stop, restart,
// delete), idempotent stop and delete, the shared folder in both directions,
// isolation between two machines, and reloading a stopped machine.
package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Harness describes the backend under test.
type Harness struct {
	Backend  vm.Backend
	Template vm.Template
	// Dir is where machine folders go (one per machine, created by the suite).
	Dir string
	// StartTimeout bounds one Start; default 60 s.
	StartTimeout time.Duration
}

func (h Harness) spec(id string) vm.Spec {
	return vm.Spec{ID: id, Name: id, Template: h.Template, Dir: filepath.Join(h.Dir, id), CPUs: 1, MemoryMB: 1024, Network: vm.NetworkOffline}
}

func (h Harness) ctx(t *testing.T) context.Context {
	d := h.StartTimeout
	if d == 0 {
		d = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Connect says hello to a running machine's guest.
func Connect(ctx context.Context, t *testing.T, m vm.Machine) *guest.Client {
	t.Helper()
	c, err := guest.Connect(ctx, guest.Config{Dial: m.DialGuest, Key: m.GuestKey, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("connect to %s: %v", m.Spec().ID, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("Lifecycle", func(t *testing.T) { lifecycle(t, h) })
	t.Run("SharedFolder", func(t *testing.T) { sharedFolder(t, h) })
	t.Run("Isolation", func(t *testing.T) { isolation(t, h) })
	t.Run("Reload", func(t *testing.T) { reload(t, h) })
	t.Run("DeleteWhileStarting", func(t *testing.T) { deleteWhileStarting(t, h) })
}

// deleteWhileStarting: Delete during a Start (a pool letting go of a VM
// that is still booting) ends that Start and leaves a machine that is not
// running, whose folder is gone and stays gone.
func deleteWhileStarting(t *testing.T, h Harness) {
	ctx := h.ctx(t)
	for i, delay := range []time.Duration{0, 5 * time.Millisecond, 30 * time.Millisecond} {
		spec := h.spec(fmt.Sprintf("dws%d", i))
		m, err := h.Backend.Create(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan error, 1)
		go func() { started <- m.Start(ctx) }()
		time.Sleep(delay)
		if err := m.Delete(ctx); err != nil {
			t.Fatalf("delete %s while starting: %v", spec.ID, err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("Start of %s did not end after Delete", spec.ID)
		}
		if st := m.Status().State; st == vm.StateRunning || st == vm.StateStarting {
			// The start won the race: a second Delete must stop it.
			if err := m.Delete(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st := m.Status().State; st == vm.StateRunning || st == vm.StateStarting {
			t.Fatalf("%s is %s after Delete", spec.ID, st)
		}
		if _, err := os.Stat(spec.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s's folder is still there: %v", spec.ID, err)
		}
	}
}

func lifecycle(t *testing.T, h Harness) {
	ctx := h.ctx(t)
	m, err := h.Backend.Create(ctx, h.spec("life"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Backend.Create(ctx, h.spec("life")); err == nil {
		t.Fatal("a second machine with the same folder was created")
	}
	if st := m.Status().State; st != vm.StateStopped {
		t.Fatalf("new machine is %s, want stopped", st)
	}
	for _, d := range []string{"inbox", "outbox", "workspace"} {
		if fi, err := os.Stat(filepath.Join(m.Spec().SharedDir(), d)); err != nil || !fi.IsDir() {
			t.Fatalf("shared/%s missing after Create: %v", d, err)
		}
	}
	if _, err := m.DialGuest(ctx); !errors.Is(err, vm.ErrNotRunning) {
		t.Fatalf("DialGuest on a stopped machine = %v, want ErrNotRunning", err)
	}
	var lastKey []byte
	for run := 1; run <= 2; run++ {
		if err := m.Start(ctx); err != nil {
			t.Fatalf("start (run %d): %v", run, err)
		}
		if st := m.Status().State; st != vm.StateRunning {
			t.Fatalf("started machine is %s", st)
		}
		c := Connect(ctx, t, m)
		hello := c.Hello()
		if hello.ProtocolVersion < protocol.MinVersion || hello.Screen.Width <= 0 {
			t.Fatalf("hello = %+v", hello)
		}
		// Every start has its own boot key, which the guest agent proves:
		// a client holding another key refuses it.
		key, _ := m.GuestKey()
		if len(key) != protocol.KeyBytes || bytes.Equal(key, lastKey) {
			t.Fatalf("run %d: boot key of %d bytes, the same as the last run's: %v", run, len(key), bytes.Equal(key, lastKey))
		}
		lastKey = key
		wrong := bytes.Repeat([]byte{0xee}, protocol.KeyBytes)
		if c, err := guest.Connect(ctx, guest.Config{Dial: m.DialGuest, Key: guest.FixedKey(wrong, false), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil {
			c.Close()
			t.Fatal("a client holding another key accepted the guest agent")
		} else if re := (*guest.RefusedError)(nil); !errors.As(err, &re) {
			t.Fatalf("a client holding another key: %v, want a refusal", err)
		}
		exited := m.Exited()
		select {
		case <-exited:
			t.Fatal("Exited is closed while running")
		default:
		}
		if err := m.Stop(ctx); err != nil {
			t.Fatalf("stop (run %d): %v", run, err)
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Fatal("Exited not closed after Stop")
		}
		if st := m.Status().State; st != vm.StateStopped {
			t.Fatalf("stopped machine is %s (%s)", st, m.Status().Reason)
		}
		if err := m.Stop(ctx); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		c.Close()
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Delete stops a running machine and removes its folder.
	if err := m.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Spec().Dir); !os.IsNotExist(err) {
		t.Fatalf("machine folder left after Delete: %v", err)
	}
	if err := m.Delete(ctx); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func sharedFolder(t *testing.T, h Harness) {
	ctx := h.ctx(t)
	m, err := h.Backend.Create(ctx, h.spec("share"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Delete(context.Background())
	if err := os.WriteFile(filepath.Join(m.Spec().SharedDir(), "inbox", "in.txt"), []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := Connect(ctx, t, m)
	var r protocol.ReadFileResult
	if err := c.Call(ctx, protocol.MethodReadFile, protocol.ReadFileParams{Path: "inbox/in.txt"}, &r); err != nil {
		t.Fatal(err)
	}
	if r.Contents == nil || *r.Contents != "from the host" {
		t.Fatalf("guest read %+v", r)
	}
	out := "from the guest"
	if err := c.Call(ctx, protocol.MethodWriteFile, protocol.WriteFileParams{Path: "outbox/out.txt", Contents: &out}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(m.Spec().SharedDir(), "outbox", "out.txt"))
	if err != nil || string(b) != out {
		t.Fatalf("host reads %q, %v", b, err)
	}
}

func isolation(t *testing.T, h Harness) {
	ctx := h.ctx(t)
	a, err := h.Backend.Create(ctx, h.spec("iso-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Delete(context.Background())
	b, err := h.Backend.Create(ctx, h.spec("iso-b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Delete(context.Background())
	os.WriteFile(filepath.Join(a.Spec().SharedDir(), "inbox", "only-a.txt"), []byte("a"), 0o644)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ca, cb := Connect(ctx, t, a), Connect(ctx, t, b)
	if err := ca.Call(ctx, protocol.MethodReadFile, protocol.ReadFileParams{Path: "inbox/only-a.txt"}, nil); err != nil {
		t.Fatalf("a cannot read its own file: %v", err)
	}
	if err := cb.Call(ctx, protocol.MethodReadFile, protocol.ReadFileParams{Path: "inbox/only-a.txt"}, nil); err == nil {
		t.Fatal("b reads a's inbox")
	}
}

func reload(t *testing.T, h Harness) {
	ctx := h.ctx(t)
	spec := h.spec("reload")
	m, err := h.Backend.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status().State != vm.StateStopped {
		t.Fatalf("new machine is %s", m.Status().State)
	}
	// As after a helper restart: the machine is found again from its spec.
	os.WriteFile(filepath.Join(spec.SharedDir(), "workspace", "kept.txt"), []byte("kept"), 0o644)
	m2, err := h.Backend.Load(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Delete(context.Background())
	if err := m2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := Connect(ctx, t, m2)
	var r protocol.ReadFileResult
	if err := c.Call(ctx, protocol.MethodReadFile, protocol.ReadFileParams{Path: "workspace/kept.txt"}, &r); err != nil || *r.Contents != "kept" {
		t.Fatalf("reloaded machine lost its workspace: %+v, %v", r, err)
	}
}
