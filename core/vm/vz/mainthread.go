package vz

import (
	"context"
	"sync/atomic"
)

// States of a job onMain hands to the main thread.
const (
	jobPending int32 = iota
	jobStarted
	jobAbandoned
)

// onMain runs job on the main thread (dispatch queues it there, as
// dispatch.MainQueue().DispatchAsync does) and waits for it or for ctx.
// A job that has not started when ctx ends never runs: the caller is told
// ctx's error, and nothing happens later in its name (a takeover window
// that opens after the takeover timed out and was handed back). A job
// that has started is waited for: it runs to its end on the main thread
// without waiting on anything else, and its result stands.
func onMain(ctx context.Context, dispatch func(func()), job func() error) error {
	var state atomic.Int32
	done := make(chan error, 1)
	dispatch(func() {
		if !state.CompareAndSwap(jobPending, jobStarted) {
			return // the caller gave up
		}
		done <- job()
	})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if state.CompareAndSwap(jobPending, jobAbandoned) {
			return ctx.Err()
		}
		return <-done
	}
}
