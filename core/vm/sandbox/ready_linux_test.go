package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/vm"
)

// TestReadyFollowsTheListen: an agent whose socket is bound well before
// it listens (a busy machine runs others between the two calls) is seen
// ready as soon as it listens, not at the next slow tick: the inotify
// event came with the bind, and no other comes.
func TestReadyFollowsTheListen(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := &Machine{b: &Backend{cfg: Config{ReadyTimeout: 10 * time.Second, Log: slog.New(slog.DiscardHandler)}}, spec: vm.Spec{ID: "vm-r", Dir: dir}}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	listened := make(chan time.Time, 1)
	go func() {
		time.Sleep(10 * time.Millisecond)
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(dir, "run", "agent.sock")}); err != nil {
			t.Error(err)
		}
		time.Sleep(110 * time.Millisecond)
		listened <- time.Now()
		if err := syscall.Listen(fd, 8); err != nil {
			t.Error(err)
		}
	}()
	if err := m.waitReady(context.Background(), make(chan error, 1)); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	if lag := ready.Sub(<-listened); lag > 45*time.Millisecond {
		t.Fatalf("the agent was seen ready %s after it listened, want within a few ms", lag)
	}
}
