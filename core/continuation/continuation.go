// Package continuation makes a new task the continuation of a finished
// one: the earlier task's output files become the new task's inputs, and
// a note about it (its request, result and last steps) goes before the
// new task in its agent's first message.
//
// It owns the continuation's rules: which task may be continued (one that
// has finished), the names its outputs get among the new inputs (a flat
// name; "earlier-NAME" where the new task has a file of that name), and
// the note, at most MaxContextNote bytes. It needs from its caller the
// task store, read only (Tasks, which *store.Store satisfies), and the
// data folder the stored paths are relative to. It guarantees that the
// inputs it returns have valid, distinct file names and are marked kept
// (copied, never moved: they stay the earlier task's outputs).
package continuation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/redact"
	"github.com/hivecrew/hivecrew/core/store"
)

// Bounds of a continuation's context note.
const (
	// MaxContextNote bounds the note a continuation's agent gets about the
	// task it continues.
	MaxContextNote = 12 << 10
	noteSteps      = 20  // the last tool calls listed
	noteStepBytes  = 240 // each, in short form
	noteTextBytes  = 3 << 10
)

// Tasks reads the store; *store.Store is one.
type Tasks interface {
	GetTask(ctx context.Context, id string) (store.Task, error)
	TaskFiles(ctx context.Context, taskID string, kind store.FileKind) ([]store.TaskFile, error)
	ListEvents(ctx context.Context, taskID string, since int64, limit int) ([]store.Event, error)
}

// Continuation is what a new task takes from the finished task it
// continues: its outputs as inputs and a note for the agent.
type Continuation struct {
	sourceID string
	note     string
	inputs   []files.Source
}

// Of reads the finished task id for a new task to continue (nil for an
// empty id: no continuation); home is the data folder. A task that does
// not exist is an invalid request (the field names it); one that has not
// finished is a conflict.
func Of(ctx context.Context, st Tasks, home, id string) (*Continuation, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, nil
	}
	src, err := st.GetTask(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errdefs.Invalidf("continuationSourceTaskId: no task %s", id)
	}
	if err != nil {
		return nil, err
	}
	if !src.Status.Terminal() {
		return nil, errdefs.Conflictf("continuationSourceTaskId: task %s is %s: only a finished task can be continued", id, src.Status)
	}
	outs, err := st.TaskFiles(ctx, id, store.FileOutput)
	if err != nil {
		return nil, err
	}
	events, err := st.ListEvents(ctx, id, 0, 0)
	if err != nil {
		return nil, err
	}
	c := &Continuation{sourceID: src.ID}
	var names, gone []string
	for _, f := range outs {
		path := filepath.Join(home, filepath.FromSlash(f.Path))
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			gone = append(gone, f.Name)
			continue
		}
		c.inputs = append(c.inputs, files.Source{Name: flatName(f.Name), Path: path, Mime: f.MimeType, Keep: true})
	}
	for _, in := range c.inputs {
		names = append(names, in.Name)
	}
	c.note = ContextNote(src, events, names, gone)
	return c, nil
}

// flatName is an output's path in the outbox as one file name
// ("charts/q1.png" becomes "charts_q1.png").
func flatName(rel string) string {
	return strings.ReplaceAll(strings.ReplaceAll(rel, "/", "_"), `\`, "_")
}

// withContinuation adds a continuation's inputs to a new task's own: an
// earlier output whose name one of them has is renamed "earlier-NAME"
// ("earlier-2-NAME"… if that is taken too). It returns the inputs and the
// names the earlier outputs got.
func withContinuation(own []files.Source, c *Continuation) ([]files.Source, map[string]string) {
	if c == nil {
		return own, nil
	}
	taken := map[string]bool{}
	for _, s := range own {
		taken[s.Name] = true
	}
	renamed := map[string]string{}
	out := append([]files.Source(nil), own...)
	for _, s := range c.inputs {
		name := s.Name
		for n := 1; taken[name]; n++ {
			if n == 1 {
				name = "earlier-" + s.Name
			} else {
				name = fmt.Sprintf("earlier-%d-%s", n, s.Name)
			}
		}
		name = fitName(name)
		for n := 2; taken[name]; n++ {
			name = fitName(fmt.Sprintf("%d-%s", n, name))
		}
		taken[name] = true
		if name != s.Name {
			renamed[s.Name] = name
		}
		s.Name = name
		out = append(out, s)
	}
	return out, renamed
}

// maxNameBytes is the longest file name an input may have.
const maxNameBytes = 255

// fitName cuts a name that is over maxNameBytes in its middle, at a rune
// boundary, keeping its start and its extension.
func fitName(name string) string {
	if len(name) <= maxNameBytes {
		return name
	}
	ext := filepath.Ext(name)
	if len(ext) > 16 {
		ext = ""
	}
	return cut(strings.TrimSuffix(name, ext), maxNameBytes-len(ext)) + ext
}

// noteFor is a continuation's note with the names its inputs got.
func noteFor(c *Continuation, renamed map[string]string) string {
	if len(renamed) == 0 {
		return c.note
	}
	var b strings.Builder
	b.WriteString(c.note)
	b.WriteString("\nSome of its files were renamed, as your own inputs have those names:")
	for _, s := range c.inputs {
		if to, ok := renamed[s.Name]; ok {
			fmt.Fprintf(&b, " %s is %s;", s.Name, to)
		}
	}
	return cut(strings.TrimSuffix(b.String(), ";")+".", MaxContextNote)
}

// ContextNote summarises a finished task for the agent of a task that
// continues it: its title, request and result, its last steps (the tool
// calls in short form) and the names its output files have among the new
// task's inputs (and those no longer on disk). The note is at most
// MaxContextNote bytes.
func ContextNote(src store.Task, events []store.Event, inputs, gone []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This task continues an earlier task (%s), which ended %s.\n", src.ID, src.Status)
	fmt.Fprintf(&b, "Earlier task's title: %s\n", cut(redact.OneLine(src.Title), 300))
	fmt.Fprintf(&b, "Earlier task's request:\n%s\n", cut(strings.TrimSpace(src.Description), noteTextBytes))
	if src.ResultSummary != nil && strings.TrimSpace(*src.ResultSummary) != "" {
		fmt.Fprintf(&b, "Its result: %s\n", cut(strings.TrimSpace(*src.ResultSummary), noteTextBytes))
	}
	if src.ContextNote != "" {
		// A chain: a short memory of what the earlier task continued.
		fmt.Fprintf(&b, "It continued a task of its own: %s\n", cut(redact.OneLine(src.ContextNote), 600))
	}
	var calls []string
	for _, e := range events {
		if e.Type == "tool_call_start" && e.ActivityType == "tool_call" {
			calls = append(calls, cut(redact.OneLine(e.Summary), noteStepBytes))
		}
	}
	if len(calls) > 0 {
		skipped := max(0, len(calls)-noteSteps)
		if skipped > 0 {
			fmt.Fprintf(&b, "Its last %d steps (of %d):\n", noteSteps, len(calls))
		} else {
			b.WriteString("Its steps:\n")
		}
		for _, c := range calls[skipped:] {
			fmt.Fprintf(&b, "- %s\n", c)
		}
	}
	if len(inputs) > 0 {
		fmt.Fprintf(&b, "Its output files are among your input files: %s.\n", strings.Join(inputs, ", "))
	} else {
		b.WriteString("It left no output files.\n")
	}
	if len(gone) > 0 {
		fmt.Fprintf(&b, "These of its outputs are no longer on disk: %s.\n", strings.Join(gone, ", "))
	}
	return cut(strings.TrimSpace(b.String()), MaxContextNote)
}

// cut bounds s to n bytes, at a rune boundary, marking the cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// Apply makes t the continuation c (when c is set) and returns its inputs:
// its own and the earlier task's outputs.
func (c *Continuation) Apply(t *store.Task, own []files.Source) []files.Source {
	if c == nil {
		return own
	}
	srcs, renamed := withContinuation(own, c)
	id := c.sourceID
	t.ContinuationOfID, t.ContextNote = &id, noteFor(c, renamed)
	return srcs
}
