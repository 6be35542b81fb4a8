package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
)

// helperProc is a real hivecrew-helper process (bin/, from make build) on
// a fresh data directory, with real sandboxes.
type helperProc struct {
	home   string
	cmd    *exec.Cmd
	pid    int
	unix   *client.Client
	exited chan error
	// mu guards logs.
	mu   sync.Mutex
	logs bytes.Buffer
}

func (h *helperProc) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.Write(b)
}

func (h *helperProc) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// startHelper starts the helper and returns once it is ready.
func startHelper() (*helperProc, error) {
	exe, err := filepath.Abs("bin/hivecrew-helper")
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "hcb") // short: unix socket paths are limited
	if err != nil {
		return nil, err
	}
	h := &helperProc{home: home, exited: make(chan error, 1)}
	h.cmd = exec.Command(exe, "serve", "--home", home, "--addr", "127.0.0.1:0", "--log-level", "warn")
	if dir := os.Getenv("BENCH_PROFILE"); dir != "" {
		// One CPU profile per helper, for go tool pprof bin/hivecrew-helper FILE.
		h.cmd.Args = append(h.cmd.Args, "--cpu-profile", filepath.Join(dir, "helper-"+filepath.Base(home)+".pprof"))
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	h.cmd.Stderr = h
	if err := h.cmd.Start(); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("start %s (run make build): %w", exe, err)
	}
	h.pid = h.cmd.Process.Pid
	go func() { h.exited <- h.cmd.Wait() }()
	addr, _ := daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if addr == "" {
		<-h.exited
		os.RemoveAll(home)
		return nil, fmt.Errorf("the helper did not start:\n%s", h.logText())
	}
	h.unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	return h, nil
}

// close stops the helper (SIGTERM) and removes its data directory.
func (h *helperProc) close() error {
	defer os.RemoveAll(h.home)
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			return fmt.Errorf("helper exited with %w:\n%s", err, h.logText())
		}
		return nil
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		<-h.exited
		return errors.New("the helper did not stop within 30 s of SIGTERM")
	}
}

// configure points the helper at the provider and applies settings; with
// no warm pool it waits for the warm VM of the first settings to go.
func (h *helperProc) configure(ctx context.Context, p *provider, settings map[string]any) error {
	name, model, key := "Scripted", "scripted", "sk-bench"
	if _, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &p.URL, APIKey: &key, DefaultModelID: &model}); err != nil {
		return err
	}
	if _, err := h.unix.PatchSettings(ctx, settings); err != nil {
		return err
	}
	if settings["warmPoolSize"] != 0 {
		return nil
	}
	deadline := time.Now().Add(time.Minute)
	for {
		vms, err := h.unix.VMs(ctx)
		if err != nil {
			return err
		}
		if len(vms) == 0 {
			return nil
		}
		for _, v := range vms {
			h.unix.RemoveVM(ctx, v.ID)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("warm VMs remain: %+v", vms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitWarm waits until the warm pool has a VM ready.
func (h *helperProc) waitWarm(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		vms, err := h.unix.VMs(ctx)
		if err != nil {
			return err
		}
		for _, v := range vms {
			if v.State == "ready" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no warm VM ready within a minute: %+v", vms)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// create queues a task; it may take up to 10,000 steps.
func (h *helperProc) create(ctx context.Context, description string) (wire.Task, error) {
	return h.unix.CreateTask(ctx, wire.CreateTask{Description: description, MaxIterations: 10_000})
}

// waitTask polls a task until ok says so.
func (h *helperProc) waitTask(ctx context.Context, id, what string, within time.Duration, ok func(wire.Task) bool) (wire.Task, error) {
	deadline := time.Now().Add(within)
	for {
		t, err := h.unix.Task(ctx, id)
		if err != nil {
			return t, err
		}
		if ok(t) {
			return t, nil
		}
		if time.Now().After(deadline) {
			return t, fmt.Errorf("timed out waiting for %s; task %s is %s (%s)\n%s", what, id, t.Status, t.StatusReason, h.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func terminal(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() }

// firstEvent returns a task's first event of type typ.
func (h *helperProc) firstEvent(ctx context.Context, id, typ string) (wire.Event, error) {
	act, err := h.unix.Activity(ctx, id, 0)
	if err != nil {
		return wire.Event{}, err
	}
	for _, e := range act.Events {
		if e.Type == typ {
			return e, nil
		}
	}
	return wire.Event{}, fmt.Errorf("task %s has no %s event", id, typ)
}

// sandboxRunning reports whether a bubblewrap process of VM id runs (its
// command line names the VM's staging folder by id).
func sandboxRunning(id string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(string(raw), "\x00")
		if filepath.Base(argv[0]) == "bwrap" && strings.Contains(string(raw), id) {
			return true
		}
	}
	return false
}

// cpuTicks returns a process's user + system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid ... utime is field 14, stime 15; comm may hold
	// spaces, so count from the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times on Linux.
const clockTicks = 100

// rssKB returns a process's resident set size in kB.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
