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

// Subagents (issue 19.5). spawn_subagent queues a child task: the parent's
// provider, model, network, policy and allowlist, the template it names or
// the parent's, the files it names copied from the parent's shared folder
// as inputs. It is an ordinary task from there (the queue, the VM cap, its
// own VM, trace and outputs), with the parent's ID. Its limits come out
// of the parent's: at most the parent's remaining time, half its steps
// left, and what is left of its budget; its LLM use counts against the
// parent's budget when it ends. When it ends, its summary reaches the
// parent's model, and its output files the parent's shared folder
// (inbox/subagents/ID). Depth and fan-out are bounded; when the parent
// ends, however it ends, its children still queued or running are
// cancelled.

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
		Description: "Start a subagent on a part of the task, in a VM of its own. Give it a complete task description: it does not see your conversation. " +
			"files are paths in your shared folder (e.g. outbox/data.csv) that it gets in its inbox. It works while you go on; its result and files reach you when it ends.",
		Params:  json.RawMessage(`{"type":"object","properties":{"task":{"type":"string","minLength":1,"maxLength":20000},"template":{"type":"string"},"files":{"type":"array","items":{"type":"string"},"maxItems":16}},"required":["task"],"additionalProperties":false}`),
		Timeout: time.Minute,
		Run:     c.spawn,
	}
}

// spawn queues a child task.
func (c *children) spawn(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Task     string   `json:"task"`
		Template string   `json:"template"`
		Files    []string `json:"files"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", err
	}
	o := c.o
	settings := o.cfg.Settings()
	c.mu.Lock()
	n := len(c.spawned)
	c.mu.Unlock()
	if n >= MaxSubagents {
		return "", fmt.Errorf("this task has started its %d subagents, the most it may", MaxSubagents)
	}
	if settings.MaxConcurrentVMs < 2 {
		return "", errors.New("a subagent needs a VM of its own, and Settings › maxConcurrentVMs is 1: do the work yourself")
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
	o.emitInfo(c.parent, fmt.Sprintf("Started subagent %s: %s", child.ID, child.Title))
	return fmt.Sprintf("Subagent %s started (%d of %d): at most %d steps and %d minutes. Go on with your part; its result reaches you when it ends.",
		child.ID, n+1, MaxSubagents, child.MaxIterations, child.TimeoutMinutes), nil
}

// inputs copies the named files out of the parent's shared folder into
// temporary files: regular files only, read through an os.Root of the
// shared folder (the guest chose the names and may have put links or
// FIFOs there), opened without blocking, bounded in size.
func (c *children) inputs(names []string) ([]inputSource, func(), error) {
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
	var out []inputSource
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
		out = append(out, inputSource{name: filepath.Base(rel), path: dst})
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
		c.mu.Lock()
		done := c.reported[id]
		if c.reported == nil {
			c.reported = map[string]bool{}
		}
		c.reported[id] = true
		c.mu.Unlock()
		if !done {
			c.report(t)
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
		woke := make(chan struct{}, 1)
		stop := make(chan struct{})
		for _, id := range ids {
			ch := c.o.Watch(id)
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
		select {
		case <-woke:
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		close(stop)
		if ctx.Err() != nil {
			return
		}
		if now := c.Running(); now < running {
			return
		}
	}
}

func (c *children) report(t store.Task) {
	runner, _, _ := c.parent.get()
	if runner == nil {
		return
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
	if t.SessionID != "" {
		from := filepath.Join(c.o.cfg.Paths.Session(t.SessionID), trace.ArtifactsDir)
		sub := "inbox/subagents/" + t.ID
		if n, err := files.CarryInto(from, c.parent.sharedDir(), sub); err != nil {
			fmt.Fprintf(&b, " Its output files could not be given to you: %v.", err)
		} else if n > 0 {
			fmt.Fprintf(&b, " Its %d output file(s) are in your shared folder's %s.", n, sub)
		}
	}
	runner.Report(b.String())
	c.o.emitInfo(c.parent, b.String())
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
