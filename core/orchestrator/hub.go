package orchestrator

import "sync"

// hub tells watchers that a task changed: each task has a channel that is
// closed (and replaced) at its next change.
type hub struct {
	// mu guards chans.
	mu    sync.Mutex
	chans map[string]chan struct{}
}

func newHub() *hub { return &hub{chans: map[string]chan struct{}{}} }

func (h *hub) watch(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.chans[id]
	if !ok {
		ch = make(chan struct{})
		h.chans[id] = ch
	}
	return ch
}

// notify wakes the task's watchers. The channel is dropped with it, so a
// finished task leaves nothing behind; the next watch makes a new one.
func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.chans[id]; ok {
		close(ch)
		delete(h.chans, id)
	}
}
