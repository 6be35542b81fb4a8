package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/llm"
	"github.com/hivecrew/hivecrew/core/store"
)

// Question is a question the agent asked the user.
type Question struct {
	ID       string    `json:"id"`
	Text     string    `json:"question"`
	Options  []string  `json:"suggestedAnswers,omitempty"`
	Created  time.Time `json:"createdAt"`
	answered chan string
}

// Permission is a tool call waiting for the user's approval.
type Permission struct {
	ID       string    `json:"id"`
	Tool     string    `json:"toolName"`
	Details  string    `json:"details"`
	Created  time.Time `json:"createdAt"`
	answered chan bool
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// control is the user's hold on a running agent: pause and resume, take
// over and hand back, added instructions, and the pending question or
// permission request. It is safe for concurrent use.
type control struct {
	// mu guards everything below.
	mu        sync.Mutex
	paused    bool
	takenOver bool
	reason    string
	// system: the pause is the system's (an LLM error, a budget, a limit,
	// a lost guest), not the user's; since is when the pause began, and
	// waiting counts the agent's waits for the resume (the agent is at a
	// safe point, in no guest call).
	system       bool
	since        time.Time
	waiting      int
	notes        []string
	resumed      chan struct{} // closed by resume; replaced by pause
	instructions []string
	// reports are subagents' results for the next turn.
	reports    []string
	question   *Question
	permission *Permission
	changed    func() // told of every change, outside the lock
	// shown is what a question or a permission request shows of its text
	// (the runner's filter: secrets redacted, control characters escaped).
	shown func(string) string
}

func newControl(changed func(), shown func(string) string) *control {
	c := &control{resumed: make(chan struct{}), changed: changed, shown: shown}
	close(c.resumed)
	return c
}

func (c *control) notify() {
	if c.changed != nil {
		c.changed()
	}
}

// pause stops the agent at its next step boundary (or before its next tool
// call); takeOver also says the user now drives the VM.
func (c *control) pause(reason string, takeOver bool) {
	c.mu.Lock()
	c.pauseLocked(reason)
	c.system = false
	c.takenOver = c.takenOver || takeOver
	c.mu.Unlock()
	c.notify()
}

// hold is the system's pause: the agent stops as for the user's, and the
// pause says why. A pause of the user's stays the user's.
func (c *control) hold(reason string) {
	c.mu.Lock()
	if !c.paused {
		c.system = true
	}
	c.pauseLocked(reason)
	c.mu.Unlock()
	c.notify()
}

func (c *control) pauseLocked(reason string) {
	if !c.paused {
		c.paused, c.since = true, time.Now()
		c.resumed = make(chan struct{})
	}
	c.reason = reason
}

// parkable reports whether the agent is held by the system and waits, with
// nothing asked of the user and no user in control, and since when.
func (c *control) parkable() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.since, c.paused && c.system && !c.takenOver && c.waiting > 0 && c.question == nil && c.permission == nil
}

// waitingNow reports whether the agent waits for a resume.
func (c *control) waitingNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting > 0
}

// note queues a note from Hivecrew (not the user) for the next turn.
// report queues a subagent's result for the next turn.
func (c *control) report(text string) {
	c.mu.Lock()
	c.reports = append(c.reports, text)
	c.mu.Unlock()
}

// hasReports reports whether reports wait for the next turn.
func (c *control) hasReports() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reports) > 0
}

// takeReports returns and clears the queued reports.
func (c *control) takeReports() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reports
	c.reports = nil
	return out
}

func (c *control) note(text string) {
	c.mu.Lock()
	c.notes = append(c.notes, text)
	c.mu.Unlock()
}

// takeNotes returns and clears the queued notes.
func (c *control) takeNotes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.notes
	c.notes = nil
	return out
}

// resume lets the agent go on, with instructions for its next turn when
// given. It reports whether the agent was paused.
func (c *control) resume(instructions string) bool {
	c.mu.Lock()
	was := c.paused
	if was {
		c.paused, c.takenOver, c.reason, c.system = false, false, "", false
		close(c.resumed)
	}
	if instructions != "" {
		c.instructions = append(c.instructions, instructions)
	}
	c.mu.Unlock()
	c.notify()
	return was
}

// instruct queues instructions for the next turn, without pausing.
func (c *control) instruct(text string) {
	c.mu.Lock()
	c.instructions = append(c.instructions, text)
	c.mu.Unlock()
	c.notify()
}

// takeInstructions returns and clears the queued instructions.
func (c *control) takeInstructions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.instructions
	c.instructions = nil
	return out
}

func (c *control) isPaused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// waitResumed blocks while the agent is paused.
func (c *control) waitResumed(ctx context.Context) error {
	c.mu.Lock()
	ch := c.resumed
	c.waiting++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// ask poses a question and waits for its answer.
func (c *control) ask(ctx context.Context, text string, options []string) (string, *Question, error) {
	for i, o := range options {
		options[i] = c.shown(o)
	}
	q := &Question{ID: newID(), Text: c.shown(text), Options: options, Created: time.Now().UTC(), answered: make(chan string, 1)}
	c.mu.Lock()
	c.question = q
	c.mu.Unlock()
	c.notify()
	defer func() {
		c.mu.Lock()
		if c.question == q {
			c.question = nil
		}
		c.mu.Unlock()
		c.notify()
	}()
	select {
	case a := <-q.answered:
		return a, q, nil
	case <-ctx.Done():
		return "", q, context.Cause(ctx)
	}
}

// answer answers the pending question; a stale id is a conflict. Multiple
// choice answers must be one of the options.
func (c *control) answer(id, text string) error {
	c.mu.Lock()
	q := c.question
	c.mu.Unlock()
	if q == nil || q.ID != id {
		return errdefs.Conflictf("question %s is not pending", id)
	}
	if len(q.Options) > 0 {
		ok := false
		for _, o := range q.Options {
			ok = ok || o == text
		}
		if !ok {
			return errdefs.Invalidf("answer %q is not one of the options", text)
		}
	}
	select {
	case q.answered <- text:
		return nil
	default:
		return errdefs.Conflictf("question %s was already answered", id)
	}
}

// requestPermission asks the user to approve a tool call and waits.
func (c *control) requestPermission(ctx context.Context, tool, details string) (bool, *Permission, error) {
	p := &Permission{ID: newID(), Tool: tool, Details: c.shown(details), Created: time.Now().UTC(), answered: make(chan bool, 1)}
	c.mu.Lock()
	c.permission = p
	c.mu.Unlock()
	c.notify()
	defer func() {
		c.mu.Lock()
		if c.permission == p {
			c.permission = nil
		}
		c.mu.Unlock()
		c.notify()
	}()
	select {
	case ok := <-p.answered:
		return ok, p, nil
	case <-ctx.Done():
		return false, p, context.Cause(ctx)
	}
}

// respond answers the pending permission request; a stale id is a conflict.
func (c *control) respond(id string, approved bool) error {
	c.mu.Lock()
	p := c.permission
	c.mu.Unlock()
	if p == nil || p.ID != id {
		return errdefs.Conflictf("permission request %s is not pending", id)
	}
	select {
	case p.answered <- approved:
		return nil
	default:
		return errdefs.Conflictf("permission request %s was already answered", id)
	}
}

// snapshot returns the pause state and what is pending.
func (c *control) snapshot() (paused, takenOver bool, reason string, q *Question, p *Permission) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused, c.takenOver, c.reason, c.question, c.permission
}

func (r *Runner) setStatus(s store.TaskStatus, reason string) {
	reason = r.filter(reason)
	r.mu.Lock()
	changed := r.status != s || r.reason != reason
	r.status, r.reason = s, reason
	r.mu.Unlock()
	if changed {
		r.emit(r.Steps(), Event{Type: "status_change", ActivityType: "info", Status: s, Summary: statusSummary(s, reason)})
	}
}

func statusSummary(s store.TaskStatus, reason string) string {
	if reason != "" {
		return fmt.Sprintf("%s: %s", s, reason)
	}
	return string(s)
}

// Status returns the task's status and why.
func (r *Runner) Status() (store.TaskStatus, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.reason
}

// Steps returns the number of steps taken.
func (r *Runner) Steps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.steps
}

// Usage returns the tokens used so far.
func (r *Runner) Usage() llm.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// Pending returns the question or permission request the task waits on.
func (r *Runner) Pending() (*Question, *Permission) {
	_, _, _, q, p := r.ctl.snapshot()
	return q, p
}

// Pause stops the agent before its next action.
func (r *Runner) Pause() {
	r.ctl.pause("paused by the user", false)
	r.setStatus(store.StatusPaused, "paused by the user")
}

// TakeOver pauses the agent and hands the VM to the user.
func (r *Runner) TakeOver() {
	r.ctl.pause("the user is in control", true)
	r.setStatus(store.StatusPaused, "the user is in control")
}

// Resume lets a paused agent go on; instructions, if any, reach the model
// on its next turn. HandBack after TakeOver is the same call.
func (r *Runner) Resume(instructions string) bool {
	if !r.ctl.resume(instructions) {
		return false
	}
	r.setStatus(store.StatusRunning, "")
	return true
}

// Instruct adds instructions for the model's next turn without pausing.
func (r *Runner) Instruct(text string) { r.ctl.instruct(text) }

// Answer answers the pending question.
func (r *Runner) Answer(id, text string) error { return r.ctl.answer(id, text) }

// Respond approves or denies the pending permission request.
func (r *Runner) Respond(id string, approved bool) error { return r.ctl.respond(id, approved) }

// Cancel stops the run at once, interrupting an LLM request or guest call
// in flight.
func (r *Runner) Cancel() { r.cancel(errCancelled) }

// TakenOver reports whether the user drives the VM (after TakeOver, until
// Resume).
func (r *Runner) TakenOver() bool {
	_, taken, _, _, _ := r.ctl.snapshot()
	return taken
}
