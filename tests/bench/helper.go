package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	home string
	// ownHome says home is the bench's own, removed by close.
	ownHome bool
	cmd     *exec.Cmd
	pid     int
	unix    *client.Client
	exited  chan error
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

// startHelper starts the helper on a fresh data directory and returns once
// it is ready.
func startHelper() (*helperProc, error) {
	home, err := os.MkdirTemp("", "hcb") // short: unix socket paths are limited
	if err != nil {
		return nil, err
	}
	h, err := startHelperAt(home)
	if err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	h.ownHome = true
	return h, nil
}

// startHelperAt starts the helper on the data directory home and returns
// once it is ready; close leaves home in place.
func startHelperAt(home string) (*helperProc, error) {
	exe, err := filepath.Abs("bin/hivecrew-helper")
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
		return nil, fmt.Errorf("start %s (run make build): %w", exe, err)
	}
	h.pid = h.cmd.Process.Pid
	go func() { h.exited <- h.cmd.Wait() }()
	addr, _ := daemontest.ReadBanner(stdout)
	go io.Copy(io.Discard, stdout)
	if addr == "" {
		<-h.exited
		return nil, fmt.Errorf("the helper did not start:\n%s", h.logText())
	}
	h.unix = client.NewUnix(filepath.Join(home, "helper.sock"))
	return h, nil
}

// close stops the helper (SIGTERM) and removes its data directory if
// startHelper made it.
func (h *helperProc) close() error {
	if h.ownHome {
		defer os.RemoveAll(h.home)
	}
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

// benchProvider is the name of the provider the bench adds.
const benchProvider = "Scripted"

// configure points the helper at the provider and applies settings; with
// no warm pool it waits for the warm VM of the first settings to go.
func (h *helperProc) configure(ctx context.Context, p *provider, settings map[string]any) error {
	name, model, key := benchProvider, "scripted", "sk-bench"
	if _, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &p.URL, APIKey: &key, DefaultModelID: &model}); err != nil {
		return err
	}
	// The scripted agents open xterm: opening a terminal follows the shell
	// policy, which asks the user by default.
	settings = maps.Clone(settings)
	settings["toolPolicy"] = map[string]string{"open_terminal": "allow"}
	// Title requests are not the agent's work: none are made.
	settings["titleFromDescription"] = true
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

// waitVMs polls the helper's VMs every 10 ms until ok says so, and says
// what it waited for when within runs out.
func (h *helperProc) waitVMs(ctx context.Context, what string, within time.Duration, ok func([]wire.VM) bool) error {
	deadline := time.Now().Add(within)
	for {
		vms, err := h.unix.VMs(ctx)
		if err != nil {
			return err
		}
		if ok(vms) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %s: %+v", what, within, vms)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitVM waits until the warm pool has a VM in state ("ready", or
// "suspended": saved to disk).
func (h *helperProc) waitVM(ctx context.Context, state string, within time.Duration) error {
	return h.waitVMs(ctx, "warm VM "+state, within, func(vms []wire.VM) bool {
		return slices.ContainsFunc(vms, func(v wire.VM) bool { return v.State == state })
	})
}

// addProvider adds a provider of type typ (llm.TypeAnthropic, ...) at
// url, whose default model is model.
func (h *helperProc) addProvider(ctx context.Context, name, typ, url, model string) error {
	key := "sk-bench"
	_, err := h.unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, Type: &typ, BaseURL: &url, APIKey: &key, DefaultModelID: &model})
	return err
}

// create queues a task on the bench's provider; it may take up to 10,000
// steps.
func (h *helperProc) create(ctx context.Context, description string) (wire.Task, error) {
	return h.createOn(ctx, benchProvider, "scripted", description)
}

// createOn queues a task on a provider and model; it may take up to
// 10,000 steps.
func (h *helperProc) createOn(ctx context.Context, provider, model, description string) (wire.Task, error) {
	return h.unix.CreateTask(ctx, wire.CreateTask{Description: description, ProviderName: provider, ModelID: model, MaxIterations: 10_000})
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

// why says why a task is where it is, never in no words: its status
// reason, or the summary it ended with, else its last events, else the
// end of the helper's log.
func (h *helperProc) why(ctx context.Context, t wire.Task) string {
	if r := strings.TrimSpace(t.StatusReason); r != "" {
		return r
	}
	if t.ResultSummary != nil && strings.TrimSpace(*t.ResultSummary) != "" && terminal(t) {
		return strings.TrimSpace(*t.ResultSummary)
	}
	if act, err := h.unix.Activity(ctx, t.ID, 0); err == nil && len(act.Events) > 0 {
		var last []string
		for _, e := range act.Events[max(0, len(act.Events)-3):] {
			last = append(last, fmt.Sprintf("%s %q", e.Type, or(e.Data.Summary, e.Data.Details)))
		}
		return "no status reason; its last events: " + strings.Join(last, ", ")
	}
	lines := strings.Split(strings.TrimSpace(h.logText()), "\n")
	return "no status reason and no events; the helper's log ends: " + strings.Join(lines[max(0, len(lines)-3):], " | ")
}

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

// dispatchRun says how dispatch samples: n timed tasks after warmup
// untimed ones, each given within to end; with waitFor, each waits first
// for a warm VM in that state ("ready", or "suspended": saved to disk).
type dispatchRun struct {
	n, warmup int
	within    time.Duration
	waitFor   string
}

// dispatch times tasks from the POST to the agent's first request to the
// model (its first screenshot in it), one at a time.
func dispatch(ctx context.Context, h *helperProc, p *provider, name string, r dispatchRun) (Metric, error) {
	var samples []time.Duration
	for i := range r.n + r.warmup {
		if r.waitFor != "" {
			if err := h.waitVM(ctx, r.waitFor, r.within); err != nil {
				return Metric{}, err
			}
		}
		marker := fmt.Sprintf("[[%s%d]]", name, i)
		p.set(marker, finish)
		t0 := time.Now()
		task, err := h.create(ctx, "Look at the screen "+marker)
		if err != nil {
			return Metric{}, err
		}
		done, err := h.waitTask(ctx, task.ID, "the end of "+marker, r.within, terminal)
		if err != nil {
			return Metric{}, err
		}
		if done.Status != "completed" {
			return Metric{}, fmt.Errorf("%s task ended %s", name, done.Status)
		}
		// The API's times are whole seconds: the bench's own clock times
		// the request, and the provider's the agent's first request,
		// which carries its first screenshot.
		if _, err := h.firstEvent(ctx, task.ID, "screenshot"); err != nil {
			return Metric{}, err
		}
		ex := p.exchanges(marker)
		if len(ex) == 0 {
			return Metric{}, fmt.Errorf("%s task made no request to the model", name)
		}
		if i >= r.warmup {
			samples = append(samples, ex[0].in.Sub(t0))
		}
	}
	p50, p95 := percentiles(samples)
	return Metric{P50: p50, P95: p95, Samples: r.n}, nil
}
