package vm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
)

func TestWaitExit(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	if !vm.WaitExit(context.Background(), closed, time.Hour) {
		t.Error("an exited machine did not count as exited")
	}
	start := time.Now()
	if vm.WaitExit(context.Background(), make(chan struct{}), 20*time.Millisecond) {
		t.Error("a running machine counted as exited")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("gave up after %s, before the grace period", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if vm.WaitExit(ctx, make(chan struct{}), time.Hour) || time.Since(start) > time.Second {
		t.Error("an ended context did not cut the wait short")
	}
}

func TestDeleteMachine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vm-1")
	if err := os.MkdirAll(filepath.Join(dir, "disk"), 0o700); err != nil {
		t.Fatal(err)
	}
	var steps []string
	var g vm.StartGuard
	stop := func(context.Context) error { steps = append(steps, "stop"); return nil }
	undo := func() error {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the folder was gone before undo: %v", err)
		}
		steps = append(steps, "undo")
		return nil
	}
	if err := vm.DeleteMachine(context.Background(), &g, "sandbox vm-1", stop, undo, dir); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); got != "stop,undo" {
		t.Errorf("steps %s, want stop,undo", got)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the machine's folder is still there: %v", err)
	}
	if _, _, err := g.Begin(context.Background(), "vm-1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a Start after Delete: %v, want not found", err)
	}

	// A failed stop stops the delete: the folder stays; a failed undo is
	// said with the machine's name.
	dir2 := t.TempDir()
	boom := errors.New("boom")
	if err := vm.DeleteMachine(context.Background(), new(vm.StartGuard), "sandbox vm-2",
		func(context.Context) error { return boom }, nil, dir2); !errors.Is(err, boom) {
		t.Errorf("stop failed: got %v", err)
	}
	if _, err := os.Stat(dir2); err != nil {
		t.Errorf("the folder went although the machine did not stop: %v", err)
	}
	err := vm.DeleteMachine(context.Background(), new(vm.StartGuard), "sandbox vm-2", stop, func() error { return boom }, dir2)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "delete sandbox vm-2") {
		t.Errorf("undo failed: got %v", err)
	}
}

func TestDialSocketNotRunning(t *testing.T) {
	b := fake.New(fake.Options{})
	m, err := b.Create(context.Background(), vm.Spec{ID: "vm-1", Dir: filepath.Join(t.TempDir(), "vm-1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DialGuest(context.Background()); !errors.Is(err, vm.ErrNotRunning) {
		t.Errorf("dial a stopped machine: %v, want ErrNotRunning", err)
	}
}
