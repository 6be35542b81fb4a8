package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// benchHelper measures the helper as users drive it, through its API, with
// real sandboxes: dispatch of a task to its first guest call on a cold and
// on a warm VM, pause and cancel of a working agent, and the kill switch
// with 8 working agents.
func benchHelper(ctx context.Context, _ *slog.Logger) (_ []Metric, err error) {
	p := newProvider()
	defer p.close()
	h, err := startHelper()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.close()) }()
	if err := h.configure(ctx, p, map[string]any{"maxConcurrentVMs": 8, "warmPoolSize": 0, "vmMemoryMB": 1024, "vmCpuCount": 1}); err != nil {
		return nil, err
	}
	cold, err := dispatch(ctx, h, p, "cold", dispatchRun{n: 20, warmup: 2, within: time.Minute})
	if err != nil {
		return nil, err
	}
	cold.Name, cold.Target = "helper: cold start (POST /tasks -> first model request, with the first screenshot)", 500*time.Millisecond
	cold.Note = "no warm VM: the task's sandbox boots"
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"warmPoolSize": 1}); err != nil {
		return nil, err
	}
	warm, err := dispatch(ctx, h, p, "warm", dispatchRun{n: 20, warmup: 2, within: time.Minute, waitFor: "ready"})
	if err != nil {
		return nil, err
	}
	warm.Name, warm.Target = "helper: warm dispatch (POST /tasks -> first model request, with the first screenshot)", 50*time.Millisecond
	warm.Baseline, warm.BaselineName = cold.P50, "cold start"
	warm.Note = "a warm VM is ready; from the POST to the agent's first request to the model, its first screenshot in it"
	if _, err := h.unix.PatchSettings(ctx, map[string]any{"warmPoolSize": 0}); err != nil {
		return nil, err
	}
	pause, err := benchPause(ctx, h, p)
	if err != nil {
		return nil, err
	}
	cancel, err := benchCancel(ctx, h, p)
	if err != nil {
		return nil, err
	}
	kill, err := benchKillSwitch(ctx, h, p)
	if err != nil {
		return nil, err
	}
	return []Metric{cold, warm, pause, cancel, kill}, nil
}

// working starts a task that clicks without end and returns it once it
// has taken steps steps.
func working(ctx context.Context, h *helperProc, p *provider, marker string, steps int) (wire.Task, error) {
	p.set(marker, clicking)
	task, err := h.create(ctx, "Keep clicking "+marker)
	if err != nil {
		return task, err
	}
	return task, waitSteps(p, marker, steps, time.Minute)
}

// waitSteps waits until the tasks with marker have sent n LLM requests.
func waitSteps(p *provider, marker string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for p.count(marker) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s made %d of %d steps in %s", marker, p.count(marker), n, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// benchPause times PATCH pause on a working agent until the user is in
// control: the answer says paused (it is written before the answer).
// Between samples the agent resumes and takes a step.
func benchPause(ctx context.Context, h *helperProc, p *provider) (Metric, error) {
	const n = 30
	task, err := working(ctx, h, p, "[[pause]]", 3)
	if err != nil {
		return Metric{}, err
	}
	var samples []time.Duration
	for range n {
		t0 := time.Now()
		got, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionPause})
		if err != nil {
			return Metric{}, err
		}
		if got.Status != "paused" {
			if _, err := h.waitTask(ctx, task.ID, "paused", 10*time.Second, func(t wire.Task) bool { return t.Status == "paused" }); err != nil {
				return Metric{}, err
			}
		}
		samples = append(samples, time.Since(t0))
		steps := p.count("[[pause]]")
		if _, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionResume}); err != nil {
			return Metric{}, err
		}
		if err := waitSteps(p, "[[pause]]", steps+2, 30*time.Second); err != nil {
			return Metric{}, err
		}
	}
	if _, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionCancel}); err != nil {
		return Metric{}, err
	}
	p50, p95 := percentiles(samples)
	return Metric{Name: "helper: pause -> user in control", P50: p50, P95: p95, Target: 200 * time.Millisecond, Samples: n,
		Note: "PATCH pause on an agent mid-work, until the answer says paused"}, nil
}

// benchCancel times PATCH cancel on a working agent until the agent has
// stopped: the answer comes once the task is cancelled and its sandbox
// is gone, which is checked.
func benchCancel(ctx context.Context, h *helperProc, p *provider) (Metric, error) {
	const n = 12
	var samples []time.Duration
	for i := range n {
		marker := fmt.Sprintf("[[cancel%d]]", i)
		task, err := working(ctx, h, p, marker, 3)
		if err != nil {
			return Metric{}, err
		}
		running, err := h.unix.Task(ctx, task.ID)
		if err != nil {
			return Metric{}, err
		}
		t0 := time.Now()
		got, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionCancel})
		took := time.Since(t0)
		if err != nil {
			return Metric{}, err
		}
		if got.Status != "cancelled" || sandboxRunning(running.VMID) {
			return Metric{}, fmt.Errorf("after cancel: task %s, sandbox of %s running: %v", got.Status, running.VMID, sandboxRunning(running.VMID))
		}
		samples = append(samples, took)
	}
	p50, p95 := percentiles(samples)
	return Metric{Name: "helper: cancel -> agent stopped", P50: p50, P95: p95, Target: 500 * time.Millisecond, Samples: n,
		Note: "PATCH cancel on an agent mid-work, until the task is cancelled and its sandbox gone"}, nil
}

// benchKillSwitch times stop-all with 8 working agents: the answer comes
// once every one has stopped; their tasks are cancelled and no sandbox of
// theirs runs, which is checked.
func benchKillSwitch(ctx context.Context, h *helperProc, p *provider) (Metric, error) {
	const rounds, agents = 7, 8
	var samples []time.Duration
	for r := range rounds {
		var tasks []wire.Task
		for i := range agents {
			marker := fmt.Sprintf("[[kill%d_%d]]", r, i)
			p.set(marker, clicking)
			t, err := h.create(ctx, "Keep clicking "+marker)
			if err != nil {
				return Metric{}, err
			}
			tasks = append(tasks, t)
		}
		for i, t := range tasks {
			if err := waitSteps(p, fmt.Sprintf("[[kill%d_%d]]", r, i), 2, time.Minute); err != nil {
				return Metric{}, err
			}
			got, err := h.unix.Task(ctx, t.ID)
			if err != nil {
				return Metric{}, err
			}
			tasks[i] = got
		}
		t0 := time.Now()
		res, err := h.unix.StopAll(ctx)
		took := time.Since(t0)
		if err != nil {
			return Metric{}, err
		}
		if len(res.Stopped) != agents {
			return Metric{}, fmt.Errorf("stop-all stopped %d of %d agents", len(res.Stopped), agents)
		}
		for _, t := range tasks {
			got, err := h.unix.Task(ctx, t.ID)
			if err != nil {
				return Metric{}, err
			}
			if got.Status != "cancelled" || sandboxRunning(t.VMID) {
				return Metric{}, fmt.Errorf("after stop-all: task %s, sandbox of %s running: %v", got.Status, t.VMID, sandboxRunning(t.VMID))
			}
		}
		samples = append(samples, took)
	}
	p50, p95 := percentiles(samples)
	return Metric{Name: "helper: kill switch, 8 working agents -> all stopped", P50: p50, P95: p95, Target: time.Second, TargetOnP95: true,
		Samples: rounds, Note: "POST stop-all, until every task is cancelled and every sandbox gone"}, nil
}
