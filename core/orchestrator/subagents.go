package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/trace"
)

// Subagents (issue 19.5, 36.2). spawn_subagent queues a child task: the
// worker model of Settings (else the parent's provider and model), the
// parent's network, policy and allowlist. Its domain says where it works:
// "vm" in a VM of its own (the template it names or the parent's, the
// files it names copied from the parent's shared folder as inputs), an
// ordinary task from there (the queue, the VM cap, its own VM, trace and
// outputs); "host" on the host with the host tools alone, taking no VM
// slot (hostrun.go). Either has the parent's ID. Its limits come out of
// the parent's: at most the parent's remaining time, half its steps left,
// and what is left of its budget; its LLM use counts against the parent's
// budget when it ends. When it ends, its summary reaches the parent's
// model, and a VM subagent's output files the parent's shared folder
// (inbox/subagents/ID). The parent lists, watches, awaits, cancels and
// messages its subagents with the tools of subagenttools.go, its own
// alone. Depth and fan-out are bounded; when the parent ends, however it
// ends, its children still queued or running are cancelled.

// Bounds.
const (
	MaxSubagentDepth = 2 // a child's children may not spawn
	MaxSubagents     = 4 // per task
	maxSubagentFiles = 16
	maxSubagentFile  = 256 << 20
)

// children are a running task's subagents.
type children struct {
	o      *Orchestrator
	parent *run
	task   store.Task

	mu       sync.Mutex
	spawned  []string
	reported map[string]bool
}

func (c *children) tool() agent.HostTool {
	return agent.HostTool{
		Name: config.SpawnSubagent,
		Description: "Start a subagent on a part of the task. Give it a complete task description: it does not see your conversation. " +
			"domain host (research: web search and reading, MCP tools, skills; no VM, so it starts at once) or vm (a VM of its own, like yours; the default). " +
			"For domain vm, files are paths in your shared folder (e.g. outbox/data.csv) that it gets in its inbox. It works while you go on; its result (and a VM subagent's files) reach you when it ends.",
		Params:  json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","minLength":1,"maxLength":20000},"domain":{"type":"string","enum":["host","vm"]},"template":{"type":"string"},"files":{"type":"array","items":{"type":"string"},"maxItems":16}},"required":["task"],"additionalProperties":false}`),
		Timeout: time.Minute,
		Run:     c.spawn,
	}
}

// spawn queues a child task.
func (c *children) spawn(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Task     string   `json:"task"`
		Domain   string   `json:"domain"`
		Template string   `json:"template"`
		Files    []string `json:"files"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", err
	}
	o := c.o
	settings := o.cfg.Settings()
	host := in.Domain == store.DomainHost
	c.mu.Lock()
	n := len(c.spawned)
	c.mu.Unlock()
	switch {
	case c.task.SubagentDepth >= MaxSubagentDepth:
		return "", fmt.Errorf("a subagent at depth %d may not start subagents of its own", c.task.SubagentDepth)
	case n >= MaxSubagents:
		return "", fmt.Errorf("this task has started its %d subagents, the most it may", MaxSubagents)
	case host && (in.Template != "" || len(in.Files) > 0):
		return "", errors.New("a subagent of domain host has no VM, so no template and no files: put what it needs in its task, or use domain vm")
	case !host && c.parent.host:
		return "", errors.New("a research subagent may start subagents of domain host only")
	case !host && settings.MaxConcurrentVMs < 2:
		return "", errors.New("a subagent of domain vm needs a VM of its own, and Settings › maxConcurrentVMs is 1: use domain host for research, or do the work yourself")
	}
	runner, _, _ := c.parent.get()
	if runner == nil {
		return "", errors.New("the task is not running")
	}
	parent, err := o.cfg.Store.GetTask(ctx, c.task.ID)
	if err != nil {
		return "", err
	}
	tmpl := cmp.Or(in.Template, parent.TemplateID)
	if in.Template != "" {
		if _, err := o.template(ctx, in.Template, settings); err != nil {
			return "", fmt.Errorf("template %q: %v", in.Template, err)
		}
	}
	// Limits out of the parent's.
	left := runner.Limits()
	if left.Time < 2*time.Minute || left.Steps < 4 {
		return "", fmt.Errorf("too little is left of this task's limits for a subagent (%s, %d steps)", left.Time.Round(time.Second), left.Steps)
	}
	child := store.Task{
		ID: uuid.NewString(), Title: "Subagent: " + firstWords(in.Task, 8), Description: strings.TrimSpace(in.Task),
		ProviderName: parent.ProviderName, ModelID: parent.ModelID, TemplateID: tmpl,
		TimeoutMinutes: max(1, int(left.Time.Minutes())), MaxIterations: left.Steps / 2,
		NetworkMode: parent.NetworkMode, ToolPolicy: parent.ToolPolicy, AllowHosts: parent.AllowHosts,
		ReasoningEnabled: parent.ReasoningEnabled, ReasoningEffort: parent.ReasoningEffort,
		ParentTaskID: &parent.ID, SubagentDepth: parent.SubagentDepth + 1, OutputDirectory: parent.OutputDirectory,
		SubagentDomain: store.DomainVM,
	}
	if host {
		child.SubagentDomain, child.TemplateID = store.DomainHost, ""
	}
	if err := c.model(ctx, &child, settings); err != nil {
		return "", err
	}
	if left.BudgetUSD > 0 {
		child.BudgetUSD = &left.BudgetUSD
	}
	if left.BudgetTokens > 0 {
		child.BudgetTokens = &left.BudgetTokens
	}
	srcs, cleanup, err := c.inputs(in.Files)
	defer cleanup()
	if err != nil {
		return "", err
	}
	if _, err := o.queue(ctx, child, srcs, true); err != nil {
		return "", fmt.Errorf("could not queue the subagent: %v", err)
	}
	c.mu.Lock()
	c.spawned = append(c.spawned, child.ID)
	c.mu.Unlock()
	where := "in a VM of its own"
	if host {
		where = "on the host (research: no VM)"
	}
	o.emitSubagent(c.parent, child.ID, fmt.Sprintf("Started subagent %s %s with %s: %s", child.ID, where, child.ModelID, child.Title))
	return fmt.Sprintf("Subagent %s started %s (%d of %d): at most %d steps and %d minutes. Go on with your part; its result reaches you when it ends "+
		"(or sooner with get_subagent_status or await_subagents).",
		child.ID, where, n+1, MaxSubagents, child.MaxIterations, child.TimeoutMinutes), nil
}

// model gives a child the worker model of Settings, if one is set and can
// serve it, else leaves it its parent's (with the parent's reasoning).
func (c *children) model(ctx context.Context, child *store.Task, settings config.Settings) error {
	p, ok, err := c.o.worker(ctx, settings)
	if err != nil {
		c.o.emitInfo(c.parent, fmt.Sprintf("%v: the subagent gets this task's model", err))
	}
	if ok && err == nil {
		child.ProviderName, child.ModelID = p.DisplayName, settings.WorkerModelID
		child.ReasoningEnabled, child.ReasoningEffort = nil, ""
	}
	if child.OnHost() {
		// OpenAI's computer-use model works only with a computer.
		prov, err := c.o.cfg.Store.FindProvider(ctx, child.ProviderName)
		if err != nil {
			return fmt.Errorf("the subagent's provider %q: %w", child.ProviderName, err)
		}
		cl, err := c.o.clientFor(prov, child.ModelID, settings, "")
		if err != nil {
			return fmt.Errorf("the subagent's model: %w", err)
		}
		if cl.Native() == llm.NativeOpenAI {
			return fmt.Errorf("%s works only with a computer, and a subagent of domain host has none: use domain vm, or set a worker model in Settings", child.ModelID)
		}
	}
	return nil
}

// inputs copies the named files out of the parent's shared folder into
// temporary files: regular files only, read through an os.Root of the
// shared folder (the guest chose the names and may have put links or
// FIFOs there), opened without blocking, bounded in size.
func (c *children) inputs(names []string) ([]files.Source, func(), error) {
	tmp, err := os.MkdirTemp("", "hivecrew-subagent-")
	if err != nil {
		return nil, func() {}, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	if len(names) == 0 {
		return nil, cleanup, nil
	}
	if len(names) > maxSubagentFiles {
		return nil, cleanup, fmt.Errorf("at most %d files", maxSubagentFiles)
	}
	c.parent.mu.Lock()
	guestShared := c.parent.hello.SharedPath
	c.parent.mu.Unlock()
	root, err := os.OpenRoot(c.parent.sharedDir())
	if err != nil {
		return nil, cleanup, err
	}
	defer root.Close()
	var out []files.Source
	for i, name := range names {
		rel := strings.TrimPrefix(filepath.ToSlash(name), "./")
		if guestShared != "" {
			rel = strings.TrimPrefix(strings.TrimPrefix(rel, strings.TrimSuffix(guestShared, "/")), "/")
		}
		if rel == "" || !fs.ValidPath(rel) {
			return nil, cleanup, fmt.Errorf("file %q: give a path inside the shared folder, such as outbox/data.csv", name)
		}
		dst := filepath.Join(tmp, fmt.Sprint(i))
		if err := copyRegular(root, rel, dst); err != nil {
			return nil, cleanup, fmt.Errorf("file %q: %v", name, err)
		}
		out = append(out, files.Source{Name: filepath.Base(rel), Path: dst})
	}
	return out, cleanup, nil
}

func copyRegular(root *os.Root, rel, dst string) error {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if st.Size() > maxSubagentFile {
		return fmt.Errorf("over %d MB", maxSubagentFile>>20)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.LimitReader(f, maxSubagentFile))
	return errors.Join(err, out.Close())
}

// Running counts the children that have not ended, and reports those that
// have, once: their result to the parent's model, their LLM use to its
// budget, their files into its shared folder.
func (c *children) Running() int {
	c.mu.Lock()
	ids := append([]string(nil), c.spawned...)
	c.mu.Unlock()
	running := 0
	for _, id := range ids {
		t, err := c.o.cfg.Store.GetTask(background(), id)
		if err != nil {
			continue
		}
		if !t.Status.Terminal() {
			running++
			continue
		}
		if text, ok := c.deliver(t); ok {
			if runner, _, _ := c.parent.get(); runner != nil {
				runner.Report(text)
			}
		}
	}
	return running
}

// Wait returns when one of the running children ends (its end is then
// reported), or ctx does. Their events wake it; it looks again every few
// seconds whatever it hears.
func (c *children) Wait(ctx context.Context) {
	running := c.Running()
	for running > 0 {
		c.mu.Lock()
		ids := append([]string(nil), c.spawned...)
		c.mu.Unlock()
		c.o.waitChange(ctx, ids, 5*time.Second)
		if ctx.Err() != nil {
			return
		}
		if now := c.Running(); now < running {
			return
		}
	}
}

// waitChange returns when one of the tasks ids changes, ctx ends, or
// within passes.
func (o *Orchestrator) waitChange(ctx context.Context, ids []string, within time.Duration) {
	woke := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for _, id := range ids {
		ch := o.Watch(id)
		go func() {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}()
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-woke:
	case <-ctx.Done():
	case <-t.C:
	}
}

// deliver gives the parent what an ended child leaves it, once: its LLM
// use counted against the parent's budget and a VM subagent's output files
// in the parent's shared folder; it returns the report for the parent's
// model, and ok false when the child was reported before.
func (c *children) deliver(t store.Task) (string, bool) {
	c.mu.Lock()
	done := c.reported[t.ID]
	if c.reported == nil {
		c.reported = map[string]bool{}
	}
	c.reported[t.ID] = true
	c.mu.Unlock()
	runner, _, _ := c.parent.get()
	if done || runner == nil {
		return "", false
	}
	runner.AddChildUsage(llm.Usage{Prompt: int(t.PromptTokens), Completion: int(t.CompletionTokens), Total: int(t.PromptTokens + t.CompletionTokens)})
	var b strings.Builder
	fmt.Fprintf(&b, "Subagent %s (%q) ended %s", t.ID, strings.TrimPrefix(t.Title, "Subagent: "), t.Status)
	if t.ResultSummary != nil && *t.ResultSummary != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimSpace(*t.ResultSummary))
	}
	if !strings.HasSuffix(b.String(), ".") {
		b.WriteString(".")
	}
	// A research subagent has no outputs, and a research parent no shared
	// folder (its children are research subagents too).
	if shared := c.parent.sharedDir(); t.SessionID != "" && !t.OnHost() && shared != "" {
		from := filepath.Join(c.o.cfg.Paths.Session(t.SessionID), trace.ArtifactsDir)
		sub := "inbox/subagents/" + t.ID
		if n, err := files.CarryInto(from, shared, sub); err != nil {
			fmt.Fprintf(&b, " Its output files could not be given to you: %v.", err)
		} else if n > 0 {
			fmt.Fprintf(&b, " Its %d output file(s) are in your shared folder's %s.", n, sub)
		}
	}
	c.o.emitSubagent(c.parent, t.ID, b.String())
	return b.String(), true
}

// cancelAll cancels the children still queued or running (the parent has
// ended).
func (c *children) cancelAll() {
	c.mu.Lock()
	ids := append([]string(nil), c.spawned...)
	c.mu.Unlock()
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(background(), 30*time.Second)
		err := c.o.Cancel(ctx, id)
		cancel()
		if err != nil && !errors.Is(err, errdefs.ErrConflict) {
			c.o.cfg.Log.Warn("cancel a subagent with its parent", "task", c.task.ID, "subagent", id, "err", err)
		}
	}
}

func firstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		return strings.Join(w[:n], " ") + "…"
	}
	return strings.Join(w, " ")
}
