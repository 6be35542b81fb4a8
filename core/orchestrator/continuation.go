package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
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

// continuation is what a new task takes from the finished task it
// continues: its outputs as inputs and a note for the agent.
type continuation struct {
	sourceID string
	note     string
	inputs   []inputSource
}

// continuationOf reads the finished task id for a new task to continue.
// A task that does not exist is an invalid request (the field names it);
// one that has not finished is a conflict.
func (o *Orchestrator) continuationOf(ctx context.Context, id string) (*continuation, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, nil
	}
	src, err := o.cfg.Store.GetTask(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, errdefs.Invalidf("continuationSourceTaskId: no task %s", id)
	}
	if err != nil {
		return nil, err
	}
	if !src.Status.Terminal() {
		return nil, errdefs.Conflictf("continuationSourceTaskId: task %s is %s: only a finished task can be continued", id, src.Status)
	}
	outs, err := o.cfg.Store.TaskFiles(ctx, id, store.FileOutput)
	if err != nil {
		return nil, err
	}
	events, err := o.cfg.Store.ListEvents(ctx, id, 0, 0)
	if err != nil {
		return nil, err
	}
	c := &continuation{sourceID: src.ID}
	var names, gone []string
	for _, f := range outs {
		path := filepath.Join(o.cfg.Paths.Home, filepath.FromSlash(f.Path))
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			gone = append(gone, f.Name)
			continue
		}
		c.inputs = append(c.inputs, inputSource{name: flatName(f.Name), path: path, mime: f.MimeType, keep: true})
	}
	for _, in := range c.inputs {
		names = append(names, in.name)
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
func withContinuation(own []inputSource, c *continuation) ([]inputSource, map[string]string) {
	if c == nil {
		return own, nil
	}
	taken := map[string]bool{}
	for _, s := range own {
		taken[s.name] = true
	}
	renamed := map[string]string{}
	out := append([]inputSource(nil), own...)
	for _, s := range c.inputs {
		name := s.name
		for n := 1; taken[name]; n++ {
			if n == 1 {
				name = "earlier-" + s.name
			} else {
				name = fmt.Sprintf("earlier-%d-%s", n, s.name)
			}
		}
		name = fitName(name)
		for n := 2; taken[name]; n++ {
			name = fitName(fmt.Sprintf("%d-%s", n, name))
		}
		taken[name] = true
		if name != s.name {
			renamed[s.name] = name
		}
		s.name = name
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
func noteFor(c *continuation, renamed map[string]string) string {
	if len(renamed) == 0 {
		return c.note
	}
	var b strings.Builder
	b.WriteString(c.note)
	b.WriteString("\nSome of its files were renamed, as your own inputs have those names:")
	for _, s := range c.inputs {
		if to, ok := renamed[s.name]; ok {
			fmt.Fprintf(&b, " %s is %s;", s.name, to)
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
	fmt.Fprintf(&b, "Earlier task's title: %s\n", cut(oneLineText(src.Title), 300))
	fmt.Fprintf(&b, "Earlier task's request:\n%s\n", cut(strings.TrimSpace(src.Description), noteTextBytes))
	if src.ResultSummary != nil && strings.TrimSpace(*src.ResultSummary) != "" {
		fmt.Fprintf(&b, "Its result: %s\n", cut(strings.TrimSpace(*src.ResultSummary), noteTextBytes))
	}
	if src.ContextNote != "" {
		// A chain: a short memory of what the earlier task continued.
		fmt.Fprintf(&b, "It continued a task of its own: %s\n", cut(oneLineText(src.ContextNote), 600))
	}
	var calls []string
	for _, e := range events {
		if e.Type == "tool_call_start" && e.ActivityType == "tool_call" {
			calls = append(calls, cut(oneLineText(e.Summary), noteStepBytes))
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

// oneLineText is s on one line, its runs of white space and control
// characters made single spaces.
func oneLineText(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '\u2028' || r == '\u2029' }), " ")
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

// joinContext is what goes before a task in its agent's first message: the
// note about the task it continues, then the rest.
func joinContext(note, rest string) string {
	switch {
	case note == "":
		return rest
	case rest == "":
		return note
	}
	return note + "\n\n" + rest
}
