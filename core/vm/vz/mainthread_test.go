package vz

import (
	"context"
	"errors"
	"testing"
	"time"
)

// mainThread stands in for AppKit's main queue: jobs wait until the test
// runs them.
type mainThread struct{ queue chan func() }

func (m mainThread) dispatch(f func()) { m.queue <- f }

// TestTakeoverThatTimedOutNeverOpens: the main thread is busy when the
// takeover is asked for; the request times out (and the task is handed
// back); when the main thread gets to the job, no window opens.
func TestTakeoverThatTimedOutNeverOpens(t *testing.T) {
	m := mainThread{queue: make(chan func(), 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	opened := false
	err := onMain(ctx, m.dispatch, func() error { opened = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a takeover the main thread did not get to: %v, want the deadline", err)
	}
	(<-m.queue)() // the main thread is free again
	if opened {
		t.Fatal("the window opened after the takeover had timed out")
	}
}

// TestTakeoverOnTimeOpens: a job the main thread runs in time is done and
// its error returned; one that started before the deadline is waited for,
// and its result stands.
func TestTakeoverOnTimeOpens(t *testing.T) {
	run := func(f func()) { go f() }
	boom := errors.New("no view")
	if err := onMain(context.Background(), run, func() error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("the job's error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started, finish := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	opened := false
	go func() {
		res <- onMain(ctx, run, func() error {
			close(started)
			<-finish
			opened = true
			return nil
		})
	}()
	<-started
	cancel() // the deadline passes while the window is being made
	select {
	case err := <-res:
		t.Fatalf("onMain returned %v before the started job ended", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(finish)
	if err := <-res; err != nil || !opened {
		t.Fatalf("a job started in time: %v, opened %v", err, opened)
	}
}
