package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// pollInterval is how often a task is polled once its event stream broke.
const pollInterval = time.Second

// maxPollFailures is how many polls in a row may fail before waiting ends.
const maxPollFailures = 10

// watchTask follows a task until it ends and returns its final state,
// calling onEvent (may be nil) once for each event, in order. It reads the
// event stream (SSE) and falls back to polling the task and its activity
// every interval if the stream breaks.
func watchTask(ctx context.Context, c *client.Client, id string, interval time.Duration, onEvent func(wire.Event)) (wire.Task, error) {
	var last int64
	deliver := func(ev wire.Event) {
		if ev.Seq != 0 && ev.Seq <= last {
			return // already delivered
		}
		last = ev.Seq
		if onEvent != nil {
			onEvent(ev)
		}
	}
	err := c.Events(ctx, id, 0, func(ev wire.Event) error { deliver(ev); return nil })
	if ctx.Err() != nil {
		return wire.Task{}, ctx.Err()
	}
	if notFound(err) {
		return wire.Task{}, err
	}
	if err == nil {
		// The stream ends after the terminal status: the task has it.
		if t, err := c.Task(ctx, id); err == nil && terminal(t.Status) {
			return t, nil
		}
	}
	// The stream broke (or ended early): poll.
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failures := 0
	for {
		t, err := c.Task(ctx, id)
		if err == nil {
			var a wire.Activity
			if a, err = c.Activity(ctx, id, last); err == nil {
				for _, ev := range a.Events {
					deliver(ev)
				}
				if terminal(t.Status) {
					return t, nil
				}
			}
		}
		switch {
		case ctx.Err() != nil:
			return wire.Task{}, ctx.Err()
		case notFound(err):
			return wire.Task{}, err
		case err != nil:
			if failures++; failures >= maxPollFailures {
				return wire.Task{}, fmt.Errorf("lost the helper while waiting for task %s: %w", id, err)
			}
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return wire.Task{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// eventLine is how an event reads in `logs` and `run --follow`.
func eventLine(ev wire.Event) string {
	return strings.TrimRight(fmt.Sprintf("%s  %-16s  %s", ev.Timestamp.Local().Format("15:04:05"), ev.Type, oneLine(ev.Data.Summary)), " ")
}

// progress is the live status line of `run --wait` on a terminal: status,
// step count, elapsed time and the last activity, rewritten in place.
type progress struct {
	w     io.Writer
	width int
	c     *client.Client
	id    string

	// mu guards everything below.
	mu    sync.Mutex
	task  wire.Task
	last  string
	drawn bool
}

// event takes in an event (and the task's counts when they change).
func (p *progress) event(ctx context.Context, ev wire.Event) {
	if ev.Type == "status_change" || ev.Type == "llm_response" {
		if t, err := p.c.Task(ctx, p.id); err == nil {
			p.mu.Lock()
			p.task = t
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	if ev.Type == "status_change" && ev.Data.Status != "" {
		p.task.Status = ev.Data.Status
	}
	if s := oneLine(ev.Data.Summary); s != "" {
		p.last = s
	}
	p.mu.Unlock()
	p.draw()
}

// line is the status line's text.
func (p *progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.task
	parts := []string{or(t.Status, "queued")}
	if t.StepCount != nil {
		parts = append(parts, "step "+fmt.Sprint(*t.StepCount))
	}
	since := t.CreatedAt
	if t.StartedAt != nil {
		since = *t.StartedAt
	}
	if !since.IsZero() {
		parts = append(parts, clock(now.Sub(since)))
	}
	if p.last != "" {
		parts = append(parts, p.last)
	}
	return strings.Join(parts, " · ")
}

// draw rewrites the line.
func (p *progress) draw() {
	line := clip(p.line(time.Now()), p.width-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	p.drawn = true
}

// clear erases the line.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// tick redraws every second (for the elapsed time) until ctx ends.
func (p *progress) tick(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.draw()
		}
	}
}

// attention says what the user has to do when a task waits for them (a
// question, a permission request, a plan to review, a pause the user did
// not ask for), or ""
// when nothing is needed.
func attention(id string, ev wire.Event) string {
	short := shortID(id)
	switch {
	case ev.Type == "question" && ev.Data.ActivityType == "user_question":
		return fmt.Sprintf("The agent asks: %s\n  answer with: hivecrew answer %s \"...\"", oneLine(ev.Data.Summary), short)
	case ev.Type == "permission_request":
		return fmt.Sprintf("%s\n  hivecrew approve %s   or   hivecrew deny %s", oneLine(ev.Data.Summary), short, short)
	case ev.Type == "status_change" && ev.Data.Status == statusPlanReview:
		return fmt.Sprintf("The plan of task %s waits for your review: hivecrew plan show %s\n  then: hivecrew plan approve %s   or   hivecrew plan edit %s   or   hivecrew plan cancel %s", short, short, short, short, short)
	case ev.Type == "status_change" && ev.Data.Status == "paused" &&
		!strings.Contains(ev.Data.Summary, "by the user") && !strings.Contains(ev.Data.Summary, "the user is in control"):
		return fmt.Sprintf("Task %s is %s\n  resume with: hivecrew resume %s", short, oneLine(ev.Data.Summary), short)
	}
	return ""
}

// waitTask waits for a task's end; with follow it prints every event on
// stdout, else, on a terminal, a live progress line on stderr. Either way,
// when the task needs the user, it says so on stderr.
func (e *env) waitTask(c *client.Client, t wire.Task, follow bool) (wire.Task, error) {
	var onEvent func(wire.Event)
	notice := func(ev wire.Event) {
		if msg := attention(t.ID, ev); msg != "" && !follow {
			fmt.Fprintln(e.stderr, msg)
		}
	}
	switch width, tty := terminalWidth(e.stderr); {
	case follow:
		onEvent = func(ev wire.Event) {
			if e.json {
				e.printJSONLine(ev)
				return
			}
			fmt.Fprintln(e.stdout, eventLine(ev))
		}
	case tty:
		p := &progress{w: e.stderr, width: width, c: c, id: t.ID, task: t}
		ctx, cancel := context.WithCancel(e.ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); p.tick(ctx) }()
		defer func() {
			cancel()
			wg.Wait()
			p.clear()
		}()
		p.draw()
		onEvent = func(ev wire.Event) {
			if attention(t.ID, ev) != "" {
				p.clear()
				notice(ev)
			}
			p.event(ctx, ev)
		}
	default:
		// Not a terminal: plain lines, one for each change of status and
		// each wait the provider imposes, so a log shows where time went.
		onEvent = func(ev wire.Event) {
			if msg := attention(t.ID, ev); msg != "" {
				notice(ev)
				return
			}
			if ev.Type == "status_change" && (ev.Data.Status != "" || strings.HasPrefix(ev.Data.Summary, "LLM: ")) {
				fmt.Fprintf(e.stderr, "%s  %s\n", ev.Timestamp.Local().Format("15:04:05"), oneLine(ev.Data.Summary))
			}
		}
	}
	return watchTask(e.ctx, c, t.ID, pollInterval, onEvent)
}

// printResult prints how a task ended (the task with --json) and returns
// exit code 1 unless it completed.
func (e *env) printResult(c *client.Client, t wire.Task) error {
	if e.json {
		if err := e.printJSON(t); err != nil {
			return err
		}
	} else {
		status := statusWords(t.Status)
		var facts []string
		if t.StepCount != nil {
			facts = append(facts, plural(*t.StepCount, "step"))
		}
		if t.Duration != nil {
			facts = append(facts, clock(time.Duration(*t.Duration)*time.Second))
		}
		if len(facts) > 0 {
			status += " (" + strings.Join(facts, ", ") + ")"
		}
		summary := t.StatusReason
		if t.ResultSummary != nil && *t.ResultSummary != "" {
			summary = *t.ResultSummary
		}
		fs := []field{{"Task", t.ID}, {"Status", status}, {"Summary", summary}}
		if len(t.OutputFiles) > 0 {
			var b strings.Builder
			for _, f := range t.OutputFiles {
				where := f.SavedTo
				if where == "" {
					where = f.Name + " (NOT SAVED: `hivecrew files " + shortID(t.ID) + " --get " + f.Name + "` downloads it)"
				}
				fmt.Fprintf(&b, "%s (%s)\n", where, size(f.Size))
			}
			fs = append(fs, field{"Outputs", b.String()})
		}
		fields(e.stdout, fs...)
	}
	if t.Status == "writebackReview" {
		fmt.Fprintf(e.stderr, "hivecrew: the task's changes to its host folders wait for your review: hivecrew review %s\n", shortID(t.ID))
	}
	if t.Status != "completed" && (t.Status != "writebackReview" || t.EndStatus != "completed") {
		return exitCode(1)
	}
	for _, f := range t.OutputFiles {
		if f.SavedTo == "" {
			// Completed, but what it made is not where the user asked.
			fmt.Fprintf(e.stderr, "hivecrew: output files could not be saved to the output folder; `hivecrew files %s --all` downloads them\n", shortID(t.ID))
			return exitCode(1)
		}
	}
	return nil
}
