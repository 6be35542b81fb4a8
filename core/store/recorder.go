package store

import (
	"context"
	"sync"
)

// Recorder writes task updates off their callers' path: Record queues an
// update and returns, and one goroutine commits whatever is queued, in
// order, in one transaction (UpdateTasks). An agent's step so never waits
// for the database, and a busy helper's agents share commits instead of
// queueing one behind another's. Flush waits until a task's queued
// updates are written: a writer that must come after them (a task's end)
// flushes first. Done is called with each update's outcome, in order, on
// the Recorder's goroutine.
type Recorder struct {
	s    *Store
	done func(id string, err error)

	// mu guards the fields below.
	mu     sync.Mutex
	queue  []TaskUpdate
	room   *sync.Cond // signalled when the queue shrinks or the writer finishes a batch
	wake   chan struct{}
	writes uint64 // batches written, for Flush's waits
	// queued counts each task's updates queued or being written.
	queued map[string]int
	closed bool
	exited chan struct{}
}

const (
	// recorderQueue bounds the queue: a caller waits for room past it, so
	// a database that stalls holds the agents up rather than the memory
	// growing.
	recorderQueue = 4096
	// recorderBatch bounds one transaction.
	recorderBatch = 512
)

// NewRecorder starts a Recorder on s; done (optional) is told each
// update's outcome. Close stops it.
func (s *Store) NewRecorder(done func(id string, err error)) *Recorder {
	r := &Recorder{s: s, done: done, wake: make(chan struct{}, 1), queued: map[string]int{}, exited: make(chan struct{})}
	r.room = sync.NewCond(&r.mu)
	go r.run()
	return r
}

// Record queues u for task id. It waits only while the queue is full. After
// Close it writes u itself.
func (r *Recorder) Record(id string, u Update) {
	r.mu.Lock()
	for len(r.queue) >= recorderQueue && !r.closed {
		r.room.Wait()
	}
	if r.closed {
		r.mu.Unlock()
		_, _, err := r.s.UpdateTask(context.Background(), id, u)
		r.report(id, err)
		return
	}
	r.queue = append(r.queue, TaskUpdate{ID: id, Update: u})
	r.queued[id]++
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Flush returns once every update queued for task id before it was called
// is written.
func (r *Recorder) Flush(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.queued[id] > 0 {
		r.room.Wait()
	}
}

// Close writes what is queued and stops the Recorder's goroutine.
func (r *Recorder) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	<-r.exited
}

func (r *Recorder) report(id string, err error) {
	if r.done != nil {
		r.done(id, err)
	}
}

// run writes batches until Close, and what is queued then.
func (r *Recorder) run() {
	defer close(r.exited)
	for {
		r.mu.Lock()
		n := min(len(r.queue), recorderBatch)
		batch := r.queue[:n:n]
		r.queue = r.queue[n:]
		closed := r.closed
		r.mu.Unlock()
		if n == 0 {
			if closed {
				r.mu.Lock()
				r.room.Broadcast()
				r.mu.Unlock()
				return
			}
			<-r.wake
			continue
		}
		errs := r.s.UpdateTasks(context.Background(), batch)
		r.mu.Lock()
		for _, b := range batch {
			if r.queued[b.ID]--; r.queued[b.ID] == 0 {
				delete(r.queued, b.ID)
			}
		}
		r.room.Broadcast()
		r.mu.Unlock()
		for i, b := range batch {
			r.report(b.ID, errs[i])
		}
	}
}
