package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
)

// The parent's hold on its subagents (issue 36.2): list_subagents,
// get_subagent_status, await_subagents, cancel_subagent and send_message,
// offered with spawn_subagent. Each acts on the task's own subagents
// alone, as the store says (a task whose parent is this task): any other
// ID, the parent's own, a sibling's or a made-up one, is refused in words,
// as is a message to a subagent that has not started or has ended. A wait
// is bounded (maxAwait, and the call's own timeout above it) and ends with
// the parent. An ended subagent's result is given once: in the answer of
// the call that first sees it ended, else at the parent's next turn.

// Bounds of the subagent tools.
const (
	maxAwait         = 10 * time.Minute
	defaultAwait     = time.Minute
	maxMessageBytes  = 8000
	subagentResultAt = 4000 // a result's characters in a listing
)

// parentName is how a subagent's messages name who sent them.
const parentName = "the task that started you"

func (c *children) tools() []agent.HostTool {
	id := `"id":{"type":"string","minLength":1,"maxLength":64,"description":"the subagent's ID, as spawn_subagent or list_subagents gave it"}`
	return []agent.HostTool{
		c.tool(),
		{Name: "list_subagents", Description: "List the subagents this task started: ID, domain, status, title, steps.",
			Params: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Timeout: 30 * time.Second, Run: c.list},
		{Name: "get_subagent_status", Description: "Show one of your subagents: its status, steps, checklist, and its result once it has ended.",
			Params: json.RawMessage(`{"type":"object","properties":{` + id + `},"required":["id"],"additionalProperties":false}`), Timeout: 30 * time.Second, Run: c.status},
		{Name: "await_subagents", Description: "Wait until the subagents named (default: all still working) have ended, at most timeoutSeconds (default 60, at most 600); answers their results, and says which still work.",
			Params:  json.RawMessage(`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string","maxLength":64},"maxItems":16},"timeoutSeconds":{"type":"number","minimum":1,"maximum":600}},"additionalProperties":false}`),
			Timeout: maxAwait + time.Minute, Run: c.await},
		{Name: "cancel_subagent", Description: "Stop one of your subagents that still works (queued or running).",
			Params: json.RawMessage(`{"type":"object","properties":{` + id + `},"required":["id"],"additionalProperties":false}`), Timeout: time.Minute, Run: c.cancel},
		{Name: "send_message", Description: "Send a running subagent of yours a message (new facts, a change of plan): it reads it at its next step.",
			Params:  json.RawMessage(`{"type":"object","properties":{` + id + `,"text":{"type":"string","minLength":1,"maxLength":8000}},"required":["id","text"],"additionalProperties":false}`),
			Timeout: 30 * time.Second, Run: c.send},
	}
}

// child reads one of the task's own subagents; any other ID is refused.
func (c *children) child(ctx context.Context, id string) (store.Task, error) {
	id = strings.TrimSpace(id)
	t, err := c.o.cfg.Store.GetTask(ctx, id)
	if err == nil && t.ParentTaskID != nil && *t.ParentTaskID == c.task.ID {
		return t, nil
	}
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		return store.Task{}, err
	}
	return store.Task{}, fmt.Errorf("%q is not a subagent of this task (list_subagents lists yours)", truncateID(id))
}

// named reads the subagent a call's {"id"} names.
func (c *children) named(ctx context.Context, raw json.RawMessage) (store.Task, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return store.Task{}, fmt.Errorf("the call's arguments: %w", err)
	}
	return c.child(ctx, in.ID)
}

func truncateID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}

// line is one subagent as a listing shows it.
func line(t store.Task) string {
	domain := or(t.SubagentDomain, store.DomainVM)
	s := fmt.Sprintf("- %s (%s, %s", t.ID, domain, t.Status)
	if t.StatusReason != "" && !t.Status.Terminal() {
		s += ": " + t.StatusReason
	}
	return s + fmt.Sprintf(") %q, %d step(s)", strings.TrimPrefix(t.Title, "Subagent: "), t.StepCount)
}

func (c *children) list(ctx context.Context, _ json.RawMessage) (string, error) {
	kids, err := c.o.cfg.Store.ChildTasks(ctx, c.task.ID)
	if err != nil {
		return "", err
	}
	if len(kids) == 0 {
		return "This task has started no subagents.", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d subagent(s) (at most %d):", len(kids), MaxSubagents)
	for _, k := range kids {
		b.WriteString("\n" + line(k))
	}
	return b.String(), nil
}

func (c *children) status(ctx context.Context, raw json.RawMessage) (string, error) {
	t, err := c.named(ctx, raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(line(t), "- "))
	fmt.Fprintf(&b, "\nModel: %s (%s).", t.ModelID, t.ProviderName)
	if len(t.Todo) > 0 {
		done := 0
		for _, it := range t.Todo {
			if it.Done {
				done++
			}
		}
		fmt.Fprintf(&b, "\nChecklist: %d of %d done.", done, len(t.Todo))
	}
	if t.Status.Terminal() {
		b.WriteString("\n" + c.result(t))
	}
	return b.String(), nil
}

// result is an ended child's report, given now if it was not before.
func (c *children) result(t store.Task) string {
	if text, ok := c.deliver(t); ok {
		return text
	}
	s := fmt.Sprintf("It ended %s", t.Status)
	if t.ResultSummary != nil && *t.ResultSummary != "" {
		s += ": " + truncateText(strings.TrimSpace(*t.ResultSummary), subagentResultAt)
	}
	return s + " (reported to you before)."
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (c *children) await(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		IDs     []string `json:"ids"`
		Timeout float64  `json:"timeoutSeconds"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", err
	}
	within := defaultAwait
	if in.Timeout > 0 {
		within = min(time.Duration(in.Timeout*float64(time.Second)), maxAwait)
	}
	var ids []string
	for _, id := range in.IDs {
		t, err := c.child(ctx, id)
		if err != nil {
			return "", err
		}
		ids = append(ids, t.ID)
	}
	if len(in.IDs) == 0 {
		kids, err := c.o.cfg.Store.ChildTasks(ctx, c.task.ID)
		if err != nil {
			return "", err
		}
		for _, k := range kids {
			if !k.Status.Terminal() {
				ids = append(ids, k.ID)
			}
		}
		if len(ids) == 0 {
			return "None of your subagents is still working.", nil
		}
	}
	start := time.Now()
	deadline := start.Add(within)
	for {
		ended, working, err := c.split(ctx, ids)
		if err != nil {
			return "", err
		}
		if len(working) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			var b strings.Builder
			for _, t := range ended {
				b.WriteString(c.result(t) + "\n")
			}
			if len(working) > 0 {
				fmt.Fprintf(&b, "After %s, still working:", time.Since(start).Round(time.Second))
				for _, t := range working {
					b.WriteString("\n" + line(t))
				}
			}
			return strings.TrimSpace(b.String()), ctx.Err()
		}
		c.o.waitChange(ctx, ids, min(5*time.Second, time.Until(deadline)))
	}
}

// split reads the tasks ids and sorts them into ended and working.
func (c *children) split(ctx context.Context, ids []string) (ended, working []store.Task, err error) {
	for _, id := range ids {
		t, err := c.o.cfg.Store.GetTask(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if t.Status.Terminal() {
			ended = append(ended, t)
		} else {
			working = append(working, t)
		}
	}
	return ended, working, nil
}

func (c *children) cancel(ctx context.Context, raw json.RawMessage) (string, error) {
	t, err := c.named(ctx, raw)
	if err != nil {
		return "", err
	}
	if t.Status.Terminal() {
		return "", fmt.Errorf("subagent %s has already ended (%s): there is nothing to cancel", t.ID, t.Status)
	}
	if err := c.o.Cancel(ctx, t.ID); err != nil {
		return "", fmt.Errorf("cancel subagent %s: %w", t.ID, err)
	}
	if t, err = c.o.cfg.Store.GetTask(ctx, t.ID); err != nil {
		return "", err
	}
	return c.result(t), nil
}

func (c *children) send(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", err
	}
	text := strings.TrimSpace(in.Text)
	if text == "" || len(text) > maxMessageBytes {
		return "", fmt.Errorf("text: a message of 1 to %d bytes", maxMessageBytes)
	}
	t, err := c.child(ctx, in.ID)
	if err != nil {
		return "", err
	}
	if t.Status.Terminal() {
		return "", fmt.Errorf("subagent %s has ended (%s): messages reach running subagents only", t.ID, t.Status)
	}
	r, ok := c.o.activeRun(t.ID)
	var runner *agent.Runner
	if ok {
		runner, _, _ = r.get()
	}
	if runner == nil {
		return "", fmt.Errorf("subagent %s has not started yet (%s): send the message once it runs, or cancel it and start another with the facts", t.ID, t.Status)
	}
	if st, _ := runner.Status(); st.Terminal() {
		return "", fmt.Errorf("subagent %s has ended (%s): messages reach running subagents only", t.ID, st)
	}
	runner.Message(parentName, text)
	c.o.emitSubagent(c.parent, t.ID, fmt.Sprintf("Message to subagent %s: %s", t.ID, text))
	return fmt.Sprintf("Sent: subagent %s reads it at its next step.", t.ID), nil
}

// emitSubagent records, in a parent's activity, news of one of its
// subagents, through the parent's agent (its filter and trace).
func (o *Orchestrator) emitSubagent(parent *run, childID, summary string) {
	if runner, _, _ := parent.get(); runner != nil {
		runner.SubagentNews(childID, summary)
	}
}
