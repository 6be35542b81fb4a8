// Package daemontest runs a real helper in-process for tests (core/daemon's
// Run with the fake VM backend, on a short temporary data directory), reads
// the banner a helper prints, in-process or as a separate process, to learn
// its TCP address and API key, and waits for a helper's task to get where a
// test wants it.
package daemontest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/core/wire"
)

// stopTimeout bounds how long Stop waits for the helper to drain.
const stopTimeout = 30 * time.Second

// Helper is a helper running in-process until Stop or the end of the test.
type Helper struct {
	Paths config.Paths
	// Addr is the TCP listen address (host:port) and Key the API key the
	// helper printed (empty when a mutate turned PrintAPIKey off).
	Addr, Key string
	// Backend is the fake VM backend, to inspect or crash machines (nil if
	// mutate set another backend).
	Backend *fake.Backend
	// Unix is a client over the unix socket (it needs no key).
	Unix *client.Client

	stop func()
}

// Start runs a helper on a new data directory (see NewHome).
func Start(t testing.TB, mutate func(*daemon.Config)) *Helper {
	t.Helper()
	return StartAt(t, NewHome(t), mutate)
}

// NewHome returns a new data directory, removed when the test ends. Its
// path is short (unlike t.TempDir's): unix socket paths are limited to
// ~104 bytes.
func NewHome(t testing.TB) string {
	t.Helper()
	home, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return home
}

// StartAt runs a helper on the data directory home and returns once it has
// printed its banner, that is once it is ready. mutate, if not nil, changes
// the configuration before the start: Addr 127.0.0.1:0, PrintAPIKey, a new
// fake backend, 1 ms LLM backoff, 10 ms webhook backoff, logs discarded (Stdout, the banner, must
// stay).
func StartAt(t testing.TB, home string, mutate func(*daemon.Config)) *Helper {
	t.Helper()
	h := &Helper{Paths: config.Paths{Home: home}}
	banner, w := io.Pipe()
	cfg := daemon.Config{
		Paths: h.Paths, Addr: "127.0.0.1:0", PrintAPIKey: true, Stdout: w, Backend: fake.New(fake.Options{}),
		LLMBackoff: time.Millisecond, WebhookBackoff: 10 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if b, ok := cfg.Backend.(*fake.Backend); ok {
		h.Backend = b
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := daemon.Run(ctx, cfg)
		w.Close()
		done <- err
	}()
	h.Addr, h.Key = ReadBanner(banner)
	go io.Copy(io.Discard, banner) // the helper writes nothing more; this ends when Run returns
	if h.Addr == "" {
		cancel()
		t.Fatalf("helper did not start: %v", <-done)
	}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("helper stopped with %v", err)
				}
			case <-time.After(stopTimeout):
				t.Errorf("helper did not stop within %s", stopTimeout)
			}
		})
	}
	t.Cleanup(h.stop)
	h.Unix = client.NewUnix(h.Paths.Socket())
	return h
}

// TCP returns a client over TCP with the helper's API key.
func (h *Helper) TCP() *client.Client { return client.NewTCP("http://"+h.Addr, h.Key) }

// Stop stops the helper and waits for it to drain; a later call does
// nothing. A helper that fails to stop cleanly fails the test.
func (h *Helper) Stop() { h.stop() }

// WaitTask polls the task id through c until ok says so, and fails the test
// when that takes longer than within; what says what the test waits for.
func WaitTask(t testing.TB, c *client.Client, id, what string, within time.Duration, ok func(wire.Task) bool) wire.Task {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		task, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(task) {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; task is %s (%s)", what, task.Status, task.StatusReason)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
