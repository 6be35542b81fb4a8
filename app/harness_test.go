package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/daemon"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestMain keeps the helpers of the tests away from the user's home and
// keyring (API keys go to the file store), and lets the test binary play
// the helper binary for TestStartsTheHelper.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == helperBinary {
		os.Exit(fakeHelperMain(os.Args[1:]))
	}
	userHome, err := os.MkdirTemp("", "hcuser")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", userHome)
	os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
	os.Unsetenv(config.HomeEnv)
	code := m.Run()
	os.RemoveAll(userHome)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	// mu guards b.
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// helper is a real helper running in-process with the fake VM backend on a
// new data directory.
type helper struct {
	t    *testing.T
	home string
	c    *client.Client
	// addr is the TCP listener's host:port.
	addr string
}

// startHelper runs a helper until the test ends; its log is shown if the
// test fails. It prints no API key (the CLI creates the only ones).
func startHelper(t *testing.T) *helper {
	t.Helper()
	return startHelperWith(t, daemontest.Start, nil)
}

// startNetHelper is startHelper on this machine's network address with
// remote access on (daemontest.StartOnNetwork), as devices pair.
func startNetHelper(t *testing.T) *helper {
	t.Helper()
	return startHelperWith(t, daemontest.StartOnNetwork, nil)
}

// startHelperWith is startHelper started by start, with the configuration
// changed by mutate (if set).
func startHelperWith(t *testing.T, start func(testing.TB, func(*daemon.Config)) *daemontest.Helper, mutate func(*daemon.Config)) *helper {
	t.Helper()
	logs := &syncBuffer{}
	t.Cleanup(func() { // after the helper stops
		if t.Failed() {
			t.Logf("helper log:\n%s", logs.String())
		}
	})
	d := start(t, func(c *daemon.Config) {
		c.PrintAPIKey = false
		c.Log = slog.New(slog.NewTextHandler(logs, nil))
		c.DrainTimeout = 5 * time.Second
		if mutate != nil {
			mutate(c)
		}
	})
	return &helper{t: t, home: d.Paths.Home, c: d.Unix, addr: d.Addr}
}

// result is what one CLI run printed.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cliTimeout bounds one CLI run in the tests.
const cliTimeout = 30 * time.Second

// cli runs the CLI against the helper (--home after the command's flags,
// as users type it: before a "--").
func (h *helper) cli(args ...string) result {
	h.t.Helper()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	at := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		at = i
	}
	args = slices.Insert(slices.Clone(args), at, "--home", h.home)
	go func() { done <- run(args, &out, &errOut) }()
	select {
	case code := <-done:
		return result{code, out.String(), errOut.String()}
	case <-time.After(cliTimeout):
		h.t.Fatalf("hivecrew %s hangs after %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), cliTimeout, out.String(), errOut.String())
		return result{}
	}
}

// cliAsync runs the CLI in the background (the caller bounds the wait).
func (h *helper) cliAsync(args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var out, errOut syncBuffer
		code := run(append(args, "--home", h.home), &out, &errOut)
		ch <- result{code, out.String(), errOut.String()}
	}()
	return ch
}

// ok runs the CLI and fails the test unless it exits 0.
func (h *helper) ok(args ...string) result {
	h.t.Helper()
	r := h.cli(args...)
	if r.code != 0 {
		h.t.Fatalf("hivecrew %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// task reads a task through the client.
func (h *helper) task(id string) wire.Task {
	h.t.Helper()
	t, err := h.c.Task(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

// waitStatus waits until a task has one of the statuses.
func (h *helper) waitStatus(id string, statuses ...string) wire.Task {
	h.t.Helper()
	return daemontest.WaitTask(h.t, h.c, id, "task status "+strings.Join(statuses, "|"), 15*time.Second,
		func(t wire.Task) bool { return slices.Contains(statuses, t.Status) })
}

// scripted starts a scripted LLM whose turns answer the requests that
// contain marker (put it in the task), and adds it with the CLI as the
// default provider "Scripted".
func (h *helper) scripted(marker string, turns ...llmtest.Turn) *llmtest.Server {
	h.t.Helper()
	llm := llmtest.New(h.t)
	llm.Script(marker, turns...)
	h.ok("providers", "add", "--name", "Scripted", "--base-url", llm.URL, "--api-key", "sk-test-secret-1234", "--default", "--model", "scripted")
	return llm
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// decodeOne decodes s as exactly one JSON value into v.
func decodeOne(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", s)
	}
}
