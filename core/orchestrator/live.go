package orchestrator

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/agent"
)

// The model's answer as it streams (issue 17.1). It is not stored: the
// llm_response event that follows it is. Watchers (the event stream's
// ?live=1) read the current answer with LiveAnswer and are woken at most
// every liveNotifyEvery while it grows.

const (
	// liveAnswerCap bounds the text and the reasoning kept of one answer.
	liveAnswerCap   = 64 << 10
	liveNotifyEvery = 100 * time.Millisecond
)

// LiveAnswer is the model's answer so far in a running task's current step.
type LiveAnswer struct {
	// Gen changes whenever an answer starts over (a new step, or an attempt
	// asked again): a watcher that saw another Gen starts from empty.
	Gen             uint64
	Step            int
	Text, Reasoning string
}

// liveAnswer is a run's LiveAnswer and the wake-ups of its watchers.
type liveAnswer struct {
	// mu guards everything below.
	mu       sync.Mutex
	cur      LiveAnswer
	notified time.Time
	pending  *time.Timer
}

// add takes a piece of the streaming answer; notify wakes watchers.
func (l *liveAnswer) add(d agent.Live, notify func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.Restart || d.Step != l.cur.Step {
		l.cur = LiveAnswer{Gen: l.cur.Gen + 1, Step: d.Step}
	}
	l.cur.Text = capped(l.cur.Text, d.Text)
	l.cur.Reasoning = capped(l.cur.Reasoning, d.Reasoning)
	if d.Text == "" && d.Reasoning == "" && !d.Restart {
		return
	}
	if wait := liveNotifyEvery - time.Since(l.notified); wait > 0 {
		if l.pending == nil {
			l.pending = time.AfterFunc(wait, func() {
				l.mu.Lock()
				l.pending, l.notified = nil, time.Now()
				l.mu.Unlock()
				notify()
			})
		}
		return
	}
	l.notified = time.Now()
	notify()
}

// clear ends the answer (its llm_response event is stored).
func (l *liveAnswer) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.Text != "" || l.cur.Reasoning != "" {
		l.cur = LiveAnswer{Gen: l.cur.Gen + 1, Step: l.cur.Step}
	}
}

func (l *liveAnswer) get() LiveAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// capped is s+more, cut at liveAnswerCap on a rune boundary.
func capped(s, more string) string {
	if room := liveAnswerCap - len(s); len(more) > room {
		more = more[:max(room, 0)]
		for len(more) > 0 && !utf8.ValidString(more) {
			more = more[:len(more)-1]
		}
	}
	return s + more
}

// LiveAnswer returns the streaming answer of a running task, if it has one.
func (o *Orchestrator) LiveAnswer(taskID string) (LiveAnswer, bool) {
	r, ok := o.activeRun(taskID)
	if !ok {
		return LiveAnswer{}, false
	}
	return r.live.get(), true
}
