package orchestrator

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// workerEnv is an env whose Settings name a worker model: "small" of the
// provider "Worker", a scripted server of its own.
func workerEnv(t *testing.T) (*env, *llmtest.Server) {
	t.Helper()
	home, err := os.MkdirTemp("", "hchost")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	worker := llmtest.New(t)
	worker.Models = []string{"small"}
	worker.Title("Sailing plan")
	e := newEnvWith(t, home, llmtest.New(t), false, func(s *config.Settings) {
		s.WorkerProviderName, s.WorkerModelID = "Worker", "small"
	})
	if err := e.st.CreateProvider(context.Background(), &store.Provider{DisplayName: "Worker", BaseURL: worker.URL, DefaultModelID: "small"}); err != nil {
		t.Fatal(err)
	}
	// A task submitted before Run has begun gets no generated title.
	waitFor(t, "the orchestrator's start", func() bool {
		e.o.mu.Lock()
		defer e.o.mu.Unlock()
		return e.o.base != nil
	})
	return e, worker
}

// waitFor polls ok for up to 20 seconds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// hasEvent reports whether a task's activity has an event of type typ
// whose summary holds text.
func (e *env) hasEvent(id, typ, text string) bool {
	for _, ev := range e.events(id) {
		if ev.Type == typ && strings.Contains(ev.Summary, text) {
			return true
		}
	}
	return false
}

// delegate submits a task of marker parent that spawns a research
// subagent on child and then calls list_subagents, whose answer waits for
// hold; it returns the task and its subagent once the subagent's model
// (on worker, by marker kid) has had n requests and the parent's the two.
func (e *env) delegate(worker *llmtest.Server, parent, child, kid string, n int, hold chan struct{}) (task, sub store.Task) {
	e.t.Helper()
	list := llmtest.Tool("list_subagents", map[string]any{})
	list.Hold = hold
	e.llm.Script(parent, llmtest.Tool("spawn_subagent", map[string]any{"task": child, "domain": "host"}), list)
	task = e.submit("Delegate "+parent, false)
	waitFor(e.t, "the subagent's requests", func() bool {
		kids, _ := e.st.ChildTasks(context.Background(), task.ID)
		if len(kids) == 1 {
			sub = kids[0]
		}
		return len(worker.Requests(kid)) == n && len(e.llm.Requests(parent)) == 2
	})
	return task, sub
}

// A research subagent, end to end on the orchestrator: the parent holds
// the only VM slot, and its subagent of domain host still starts, runs on
// the worker model, never asks for a VM, keeps a checklist, and reads the
// parent's message at its next step. Its forged calls of a VM tool and of
// a VM subagent are refused in words. The parent lists, watches and
// awaits it with its tools, is refused another task's ID and a VM
// subagent it has no slot for, and gets its result. Titles come from the
// worker model, never the task's own.
func TestResearchSubagent(t *testing.T) {
	e, worker := workerEnv(t)
	ctx := context.Background()

	childHold := make(chan struct{})
	checklist := llmtest.Tool("todo", map[string]any{"action": "create", "items": []string{"Find the morning tide", "Find the evening tide"}})
	checklist.Hold = childHold
	const child = "Find when the tide turns in Porthleven [[child]]"
	worker.Script("[[child]]", append([]llmtest.Turn{
		llmtest.Tool("run_shell", map[string]any{"command": "cat /etc/passwd"}),
		llmtest.Tool("spawn_subagent", map[string]any{"task": "Click around", "domain": "vm"}),
		checklist,
	}, llmtest.Done("The tide turns at 14:05 and at 02:30.")...)...)

	// The child starts while the parent holds the only slot, and reaches
	// its held third step; the parent waits on list_subagents.
	const parent = "[[parent]]"
	parentHold := make(chan struct{})
	task, kid := e.delegate(worker, parent, child, "[[child]]", 3, parentHold)
	if p, _ := e.st.GetTask(ctx, task.ID); p.Status != store.StatusRunning {
		t.Fatalf("the parent is %s while its subagent runs", p.Status)
	}
	if kid.SubagentDomain != store.DomainHost || kid.ProviderName != "Worker" || kid.ModelID != "small" {
		t.Fatalf("the subagent: domain %q, model %s of %s; want host, small of Worker", kid.SubagentDomain, kid.ModelID, kid.ProviderName)
	}
	first := e.llm.Requests(parent)
	e.llm.Script(parent, append([]llmtest.Turn{
		llmtest.Tool("send_message", map[string]any{"id": kid.ID, "text": "Look for the evening tide too."}),
		llmtest.Tool("get_subagent_status", map[string]any{"id": task.ID}),
		llmtest.Tool("cancel_subagent", map[string]any{"id": "made-up"}),
		llmtest.Tool("spawn_subagent", map[string]any{"task": "Click around", "domain": "vm"}),
		llmtest.Tool("await_subagents", map[string]any{"timeoutSeconds": 60}),
	}, llmtest.Done("The tides are known.")...)...)
	close(parentHold)
	waitFor(t, "the message in the subagent's activity", func() bool {
		return e.hasEvent(kid.ID, "subagent_update", "Message from the task that started you: Look for the evening tide too.")
	})
	close(childHold)

	done := e.wait(task.ID, "the parent's end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted {
		t.Fatalf("the parent ended %s: %s", done.Status, done.StatusReason)
	}
	kid, err := e.st.GetTask(ctx, kid.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kid.Status != store.StatusCompleted || kid.ResultSummary == nil || *kid.ResultSummary != "The tide turns at 14:05 and at 02:30." {
		t.Fatalf("the subagent ended %s: %v", kid.Status, kid.ResultSummary)
	}
	if kid.VMID != "" || e.pool.askedFor(kid.ID) != 0 {
		t.Fatalf("the research subagent asked for a VM (%d times; VM %q)", e.pool.askedFor(kid.ID), kid.VMID)
	}
	if len(kid.Todo) != 2 || kid.Todo[1].Text != "Find the evening tide" {
		t.Fatalf("the subagent's checklist: %+v", kid.Todo)
	}

	// What the subagent's model was offered and told.
	kreqs := worker.Requests("[[child]]")
	for _, tool := range []string{"run_shell", "mouse_click", "read_file", "screenshot"} {
		if strings.Contains(kreqs[0], `"name":"`+tool+`"`) {
			t.Errorf("the subagent was offered %s", tool)
		}
	}
	for _, tool := range []string{"todo", "spawn_subagent", "send_message"} {
		if !strings.Contains(kreqs[0], `"name":"`+tool+`"`) {
			t.Errorf("the subagent was not offered %s", tool)
		}
	}
	for i, want := range map[int]string{
		1: "run_shell needs a VM, and this subagent has none",
		2: "a research subagent may start subagents of domain host only",
		3: "Message from the task that started you: Look for the evening tide too.",
	} {
		if !strings.Contains(kreqs[i], want) {
			t.Errorf("subagent request %d does not say %q:\n%s", i, want, kreqs[i])
		}
	}
	for i, body := range kreqs {
		if strings.Contains(body, "image_url") {
			t.Errorf("subagent request %d carries an image", i)
		}
	}
	if kids, _ := e.st.ChildTasks(ctx, kid.ID); len(kids) != 0 {
		t.Fatalf("the research subagent started %d subagents of domain vm", len(kids))
	}

	// What the parent's model was told.
	preqs := append(first, e.llm.Requests(parent)...)
	for _, want := range []string{
		"started on the host (research: no VM)",
		"- " + kid.ID + " (host, running",                         // list_subagents
		"Sent: subagent " + kid.ID + " reads it at its next step", // send_message
		`\"` + task.ID + `\" is not a subagent of this task`,      // its own ID
		`\"made-up\" is not a subagent of this task`,
		"maxConcurrentVMs is 1: use domain host for research",
		"ended completed: The tide turns at 14:05 and at 02:30.", // await_subagents
	} {
		if !strings.Contains(strings.Join(preqs, "\n"), want) {
			t.Errorf("the parent's model never saw %q", want)
		}
	}
	waitFor(t, "the worker model's title", func() bool {
		p, _ := e.st.GetTask(ctx, task.ID)
		return p.Title == "Sailing plan"
	})
	if n := len(e.llm.Titles()); n != 0 {
		t.Errorf("the task's own model was asked for %d title(s)", n)
	}
	if !e.hasEvent(task.ID, "subagent_update", "Message to subagent "+kid.ID) {
		t.Error("the parent's activity does not show the message it sent")
	}
}

// The parent cancels its research subagent while it waits for its model:
// it ends cancelled at once, a message to it is then refused, and an
// await without IDs finds nothing left to wait for. A subagent's VM
// actions have nothing to act on and say so.
func TestResearchSubagentCancelled(t *testing.T) {
	e, worker := workerEnv(t)
	ctx := context.Background()
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	stuck := llmtest.Text("Thinking.")
	stuck.Hold = never
	worker.Script("[[slow child]]", stuck)

	const parent = "[[parent]]"
	parentHold := make(chan struct{})
	task, kid := e.delegate(worker, parent, "Research slowly [[slow child]]", "[[slow child]]", 1, parentHold)
	conflict(t, "take over a research subagent", e.o.TakeOver(ctx, kid.ID))
	conflict(t, "show a research subagent's VM", e.o.ShowVM(ctx, kid.ID))

	e.llm.Script(parent, append([]llmtest.Turn{
		llmtest.Tool("cancel_subagent", map[string]any{"id": kid.ID}),
		llmtest.Tool("send_message", map[string]any{"id": kid.ID, "text": "Too late?"}),
		llmtest.Tool("cancel_subagent", map[string]any{"id": kid.ID}),
		llmtest.Tool("await_subagents", map[string]any{}),
	}, llmtest.Done("Cancelled it.")...)...)
	close(parentHold)
	done := e.wait(task.ID, "the parent's end", func(t store.Task) bool { return t.Status.Terminal() })
	if done.Status != store.StatusCompleted {
		t.Fatalf("the parent ended %s: %s", done.Status, done.StatusReason)
	}
	if kid, _ = e.st.GetTask(ctx, kid.ID); kid.Status != store.StatusCancelled {
		t.Fatalf("the subagent is %s", kid.Status)
	}
	all := strings.Join(e.llm.Requests(parent), "\n")
	for _, want := range []string{
		"ended cancelled",
		"subagent " + kid.ID + " has ended (cancelled): messages reach running subagents only",
		"subagent " + kid.ID + " has already ended (cancelled): there is nothing to cancel",
		"None of your subagents is still working.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the parent's model never saw %q", want)
		}
	}
	if e.pool.askedFor(kid.ID) != 0 {
		t.Fatal("the research subagent asked for a VM")
	}
}

// After a crash, the research subagents a helper left running or queued
// end (their parent lost their answers with the helper) and none starts
// again.
func TestResearchSubagentsEndAtRecovery(t *testing.T) {
	home, err := os.MkdirTemp("", "hchost")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	llm := llmtest.New(t)
	first := newEnv(t, home, llm, false)
	ctx := context.Background()
	first.halt()
	parent := "parent"
	mk := func(id string, status store.TaskStatus, domain string) {
		task := store.Task{ID: id, Title: id, Description: id + " [[recovered]]", Status: status, ProviderName: "Scripted", ModelID: "scripted", SubagentDomain: domain}
		if id != parent {
			task.ParentTaskID, task.SubagentDepth = &parent, 1
		}
		if err := first.st.CreateTask(ctx, &task, nil); err != nil {
			t.Fatal(err)
		}
	}
	mk(parent, store.StatusFailed, "")
	mk("running-host", store.StatusRunning, store.DomainHost)
	mk("queued-host", store.StatusQueued, store.DomainHost)
	first.st.Close()

	e := newEnv(t, home, llm, true)
	for id, want := range map[string]store.TaskStatus{"running-host": store.StatusFailed, "queued-host": store.StatusCancelled} {
		got, err := e.st.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.ResultSummary == nil || !strings.Contains(*got.ResultSummary, "the helper restarted") {
			t.Errorf("%s is %s (%v); want %s, the restart said", id, got.Status, got.ResultSummary, want)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(llm.Requests("[[recovered]]")); n != 0 {
		t.Fatalf("a recovered research subagent asked its model %d time(s)", n)
	}
}

// The worker model condenses a task's history unless it is the task's own
// model; a worker whose provider was removed is said in the task's
// activity, and the task's own model condenses.
func TestCondenserIsTheWorkerModel(t *testing.T) {
	e, _ := workerEnv(t)
	ctx := context.Background()
	task := store.Task{ID: "t1", ProviderName: "Scripted", ModelID: "scripted"}
	settings := e.o.cfg.Settings()
	if c := e.o.condenser(ctx, &run{id: task.ID}, task, settings); c == nil || c.Model() != "small" {
		t.Fatalf("the condenser of a task of another model: %v", c)
	}
	own := store.Task{ID: "t2", ProviderName: "Worker", ModelID: "small"}
	if c := e.o.condenser(ctx, &run{id: own.ID}, own, settings); c != nil {
		t.Fatalf("a task of the worker model gets a condenser of %s", c.Model())
	}
	task = e.submit("A task [[gone]]", false)
	settings.WorkerProviderName = "Removed"
	if c := e.o.condenser(ctx, &run{id: task.ID}, task, settings); c != nil {
		t.Fatalf("a removed worker condenses with %s", c.Model())
	}
	if !e.hasEvent(task.ID, "status_change", `the worker model's provider "Removed"`) {
		t.Fatal("the task's activity does not say the worker is gone")
	}
}
