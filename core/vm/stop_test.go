package vm_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/guest"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/server"
)

// machine is a running machine that records how it was stopped. Its run
// ends (Exited) when it is stopped or halted, or when down is closed (the
// guest OS powered off).
type machine struct {
	exited       chan struct{}
	once         sync.Once
	stops, halts atomic.Int32
	dial         func(context.Context) (net.Conn, error)
	key          []byte
}

func newMachine() *machine { return &machine{exited: make(chan struct{})} }

func (m *machine) end()                             { m.once.Do(func() { close(m.exited) }) }
func (m *machine) Spec() vm.Spec                    { return vm.Spec{ID: "vm-1"} }
func (m *machine) Status() vm.Status                { return vm.Status{State: vm.StateRunning} }
func (m *machine) Start(context.Context) error      { return nil }
func (m *machine) Exited() <-chan struct{}          { return m.exited }
func (m *machine) Stop(context.Context) error       { m.stops.Add(1); m.end(); return nil }
func (m *machine) Delete(ctx context.Context) error { return m.Stop(ctx) }
func (m *machine) GuestKey() ([]byte, bool)         { return m.key, false }
func (m *machine) DialGuest(ctx context.Context) (net.Conn, error) {
	if m.dial == nil {
		return nil, vm.ErrNotRunning
	}
	return m.dial(ctx)
}

// macMachine is a machine as the macOS backend has them: it halts, and
// shuts down cleanly only from its guest.
type macMachine struct{ *machine }

func (m macMachine) Halt(context.Context) error { m.halts.Add(1); m.end(); return nil }
func (m macMachine) ShutsDownFromGuest() bool   { return true }

// TestStopPolicy answers issue 16.5: a disposable clone is halted at once
// (a macOS guest asked to stop shows a dialog and holds one of the two
// host slots for the whole grace period); a machine whose disk is kept is
// shut down by its guest, with the backend's Stop only as the fallback;
// backends without either (Linux sandboxes) are stopped as before.
func TestStopPolicy(t *testing.T) {
	ctx := context.Background()
	never := func(context.Context) error { t.Error("the guest was asked"); return nil }

	mac := macMachine{newMachine()}
	how, err := vm.StopAs(ctx, mac, vm.Discard, never, time.Minute)
	if err != nil || how != vm.StoppedByHalt || mac.halts.Load() != 1 || mac.stops.Load() != 0 {
		t.Errorf("discard a macOS clone: %q %v, %d halts, %d stops", how, err, mac.halts.Load(), mac.stops.Load())
	}

	linux := newMachine()
	how, err = vm.StopAs(ctx, linux, vm.Discard, never, time.Minute)
	if err != nil || how != vm.StoppedByStop || linux.stops.Load() != 1 {
		t.Errorf("discard a sandbox: %q %v", how, err)
	}
	linux = newMachine()
	how, err = vm.StopAs(ctx, linux, vm.Keep, never, time.Minute)
	if err != nil || how != vm.StoppedByStop || linux.stops.Load() != 1 {
		t.Errorf("keep a sandbox: %q %v", how, err)
	}

	// Kept, and the guest goes down when asked: no Stop at all.
	mac = macMachine{newMachine()}
	asked := 0
	how, err = vm.StopAs(ctx, mac, vm.Keep, func(context.Context) error {
		asked++
		go func() { time.Sleep(20 * time.Millisecond); mac.end() }()
		return nil
	}, time.Minute)
	if err != nil || how != vm.StoppedByGuest || asked != 1 || mac.stops.Load()+mac.halts.Load() != 0 {
		t.Errorf("keep a macOS VM whose guest shuts down: %q %v asked %d", how, err, asked)
	}

	// The guest agent is missing or refuses: Stop at once.
	mac = macMachine{newMachine()}
	start := time.Now()
	how, err = vm.StopAs(ctx, mac, vm.Keep, func(context.Context) error { return errors.New("no agent") }, time.Minute)
	if err != nil || !strings.HasPrefix(how, vm.StoppedByStop) || !strings.Contains(how, "no agent") || mac.stops.Load() != 1 || time.Since(start) > time.Second {
		t.Errorf("keep, agent fails: %q %v after %v", how, err, time.Since(start))
	}

	// No guest client (the VM never said hello): Stop.
	mac = macMachine{newMachine()}
	if how, err := vm.StopAs(ctx, mac, vm.Keep, nil, time.Minute); err != nil || how != vm.StoppedByStop || mac.stops.Load() != 1 {
		t.Errorf("keep without a guest: %q %v", how, err)
	}
}

// TestStopPolicyHostileGuest: a guest that says yes and stays up, or never
// answers, cannot hold the stop past its bounds: Stop follows after grace,
// and the question itself is bounded.
func TestStopPolicyHostileGuest(t *testing.T) {
	ctx := context.Background()
	mac := macMachine{newMachine()}
	start := time.Now()
	how, err := vm.StopAs(ctx, mac, vm.Keep, func(context.Context) error { return nil }, 200*time.Millisecond)
	if err != nil || !strings.Contains(how, "still running") || mac.stops.Load() != 1 {
		t.Errorf("guest says yes and stays up: %q %v", how, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("took %v, want the 200ms grace", d)
	}

	mac = macMachine{newMachine()}
	start = time.Now()
	how, err = vm.StopAs(ctx, mac, vm.Keep, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, 300*time.Millisecond)
	if err != nil || mac.stops.Load() != 1 || !strings.Contains(how, "could not") {
		t.Errorf("guest never answers: %q %v", how, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a silent guest held the stop for %v", d)
	}

	// The caller's deadline ends the wait for a slow guest too.
	mac = macMachine{newMachine()}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := vm.StopAs(cctx, mac, vm.Keep, func(context.Context) error { return nil }, time.Hour); err != nil || mac.stops.Load() != 1 || time.Since(start) > 2*time.Second {
		t.Errorf("deadline: %v %d stops after %v", err, mac.stops.Load(), time.Since(start))
	}
}

// offDriver is a guest driver whose PowerOff powers the machine off.
type offDriver struct {
	*fake.Driver
	off func()
}

func (d offDriver) PowerOff(context.Context) error { d.off(); return nil }

// TestStopPolicyThroughTheGuestAgent runs the kept stop end to end over the
// real protocol: a real guest agent server, the host's guest client asking
// it to shut down (what a macOS template's setup --finish and a seal do),
// the agent powering the guest off.
func TestStopPolicyThroughTheGuestAgent(t *testing.T) {
	mac := macMachine{newMachine()}
	mac.key = vm.NewGuestKey()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(server.Config{SharedDir: t.TempDir(), Driver: offDriver{fake.NewDriver(1280, 800, 1), mac.end}, Log: log, AgentVersion: "test", Key: mac.key})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(sctx, ln)
	defer srv.Close()
	mac.dial = func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	c, err := guest.Connect(context.Background(), guest.Config{Dial: mac.DialGuest, Key: mac.GuestKey, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	how, err := vm.StopAs(context.Background(), mac, vm.Keep, c.Shutdown, 10*time.Second)
	if err != nil || how != vm.StoppedByGuest || mac.stops.Load() != 0 {
		t.Fatalf("kept stop through the guest agent: %q %v, %d stops", how, err, mac.stops.Load())
	}
}
