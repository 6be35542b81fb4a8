package agent

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// TestStepLimitHoldsForTheUser: with a limit grace, a task at its step
// limit pauses saying so; continued with 3 more steps it goes on, and the
// model is told; at the new limit, left alone, it ends as before once the
// grace is over.
func TestStepLimitHoldsForTheUser(t *testing.T) {
	l := newLLM(t) // every turn waits 0 s
	e := newEnv(t, l, func(t *Task) { t.MaxIterations, t.LimitGrace = 2, 1500*time.Millisecond })
	res := e.run()
	waitFor(t, "the hold at the limit", func() bool { s, _ := e.r.Status(); return s == store.StatusPaused })
	_, reason := e.r.Status()
	if !strings.Contains(reason, "reached its limit of 2 steps: resume to continue for 2 more") || e.r.Steps() != 2 {
		t.Fatalf("held with %q after %d steps", reason, e.r.Steps())
	}
	// Parkable once the agent waits (a moment after the status says so).
	waitFor(t, "a parkable hold", func() bool { _, ok := e.r.Parkable(); return ok })
	e.r.Extend(3, 0)
	e.r.Resume("")
	start := time.Now()
	r := wait(t, res)
	if r.Status != store.StatusMaxIterations || r.Steps != 5 {
		t.Fatalf("result %+v", r)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("ended %s after the second limit: the grace was not given", took)
	}
	found := false
	for _, b := range l.requests() {
		found = found || strings.Contains(b, "The user continued the task past its limit: you have 3 more steps")
	}
	if !found {
		t.Errorf("the model was not told of the new limit")
	}
}

// TestTimeLimitHoldsForTheUser: at its time limit the task pauses; resumed
// without a new limit it gets its time again; left at the next one, it
// ends timed out.
func TestTimeLimitHoldsForTheUser(t *testing.T) {
	l := newLLM(t)
	e := newEnv(t, l, func(t *Task) { t.Timeout, t.LimitGrace, t.MaxIterations = 400*time.Millisecond, time.Second, 1000 })
	res := e.run()
	waitFor(t, "the hold at the time limit", func() bool { s, _ := e.r.Status(); return s == store.StatusPaused })
	if _, reason := e.r.Status(); !strings.Contains(reason, "reached its time limit") {
		t.Fatalf("held with %q", reason)
	}
	first := e.r.Steps()
	time.Sleep(300 * time.Millisecond) // held, not stopped: the grace is longer
	e.r.Resume("")
	r := wait(t, res)
	if r.Status != store.StatusTimedOut || r.Steps <= first {
		t.Fatalf("result %+v (held at step %d)", r, first)
	}
}

// flaky is a guest whose agent can be made to stop answering.
type flaky struct {
	Guest
	down atomic.Bool
}

var errDown = errors.New("guest connection lost")

func (f *flaky) Healthy() bool { return !f.down.Load() }
func (f *flaky) Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	if f.down.Load() {
		return protocol.ScreenshotResult{}, errDown
	}
	return f.Guest.Screenshot(ctx, p)
}

// TestLostGuestHoldsTheTask: a guest that stops answering holds the task
// for the user instead of failing it; when the guest answers again the
// task goes on by itself, the step is taken again and the task completes,
// and the model reads the note left meanwhile.
func TestLostGuestHoldsTheTask(t *testing.T) {
	var g *flaky
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("wait", map[string]any{"seconds": 0})}},
	}, done(true, "Finished after the VM came back.")...)...)
	e := newEnvWith(t, l, nil, func(real Guest) Guest { g = &flaky{Guest: real}; return g })
	g.down.Store(true)
	res := e.run()
	waitFor(t, "the hold", func() bool { s, _ := e.r.Status(); return s == store.StatusPaused })
	_, reason := e.r.Status()
	if !strings.Contains(reason, "lost touch with the VM's guest agent (guest connection lost)") {
		t.Fatalf("held with %q", reason)
	}
	waitFor(t, "a parkable hold", func() bool { _, ok := e.r.Parkable(); return ok })
	if e.r.Steps() != 0 || len(l.requests()) != 0 {
		t.Fatalf("%d steps, %d requests while the guest was gone", e.r.Steps(), len(l.requests()))
	}
	e.r.VMReplaced("This is a fresh VM.")
	g.down.Store(false) // no Resume: the task sees its guest back
	r := wait(t, res)
	if r.Status != store.StatusCompleted || r.Steps != 2 {
		t.Fatalf("result %+v", r)
	}
	if !strings.Contains(l.requests()[0], "Note from Hivecrew: This is a fresh VM.") {
		t.Errorf("the first request lacks the note")
	}
}

// TestUserPauseIsNotParkable: the user's pause keeps the VM, however long.
func TestUserPauseIsNotParkable(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, newLLM(t, turn{hold: hold}), nil)
	res := e.run()
	e.r.Pause()
	close(hold)
	waitFor(t, "the agent waiting", func() bool { return e.r.ctl.waitingNow() })
	if _, ok := e.r.Parkable(); ok {
		t.Fatal("the user's pause is parkable")
	}
	e.r.Cancel()
	wait(t, res)
}

// blinking is a guest whose connection drops for a moment: its next
// screenshots fail as the guest client fails them while it reconnects,
// and it is healthy again by the time the agent asks.
type blinking struct {
	Guest
	drops atomic.Int32
}

func (b *blinking) Healthy() bool { return true }
func (b *blinking) Screenshot(ctx context.Context, p protocol.ScreenshotParams) (protocol.ScreenshotResult, error) {
	if b.drops.Add(-1) >= 0 {
		return protocol.ScreenshotResult{}, errdefs.Unavailablef("screenshot: guest agent not connected (reconnecting)")
	}
	return b.Guest.Screenshot(ctx, p)
}

// TestDroppedConnectionRetakesTheStep: a guest whose connection dropped
// and came back costs the step a second look, not the task; one that
// drops again and again fails it rather than looping.
func TestDroppedConnectionRetakesTheStep(t *testing.T) {
	var g *blinking
	l := newLLM(t, done(true, "Done.")...)
	e := newEnvWith(t, l, nil, func(real Guest) Guest { g = &blinking{Guest: real}; return g })
	g.drops.Store(2)
	if r := wait(t, e.run()); r.Status != store.StatusCompleted {
		t.Fatalf("a connection that came back ended the task: %+v", r)
	}

	l = newLLM(t, done(true, "Done.")...)
	e = newEnvWith(t, l, nil, func(real Guest) Guest { g = &blinking{Guest: real}; return g })
	g.drops.Store(100)
	r := wait(t, e.run())
	if r.Status != store.StatusFailed || !strings.Contains(r.Summary, "could not be observed") {
		t.Fatalf("a guest dropping every time: %+v", r)
	}
	if n := 100 - g.drops.Load(); n != maxLostLooks+1 {
		t.Fatalf("%d looks, want %d", n, maxLostLooks+1)
	}
}
