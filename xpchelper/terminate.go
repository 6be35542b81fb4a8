package main

import "sync"

// terminationGate is how the macOS helper answers AppKit's
// applicationShouldTerminate: (a logout, a restart, Quit): without an
// answer AppKit exits at once and the agents are never stopped and
// recorded as interrupted. The first request begins the helper's graceful
// shutdown and answers "later"; once the helper has stopped, AppKit gets
// the final answer. It is portable so that it is tested everywhere.
type terminationGate struct {
	mu          sync.Mutex
	asked, done bool
}

// ask answers applicationShouldTerminate: later says to answer
// NSTerminateLater (else NSTerminateNow: the helper has already stopped),
// begin says to begin the graceful shutdown (only the first time).
func (g *terminationGate) ask() (later, begin bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return false, false
	}
	begin = !g.asked
	g.asked = true
	return true, begin
}

// finished records that the helper has stopped and reports whether AppKit
// waits for the answer to a termination request (reply
// replyToApplicationShouldTerminate: YES); if not, the helper ends its run
// loop itself.
func (g *terminationGate) finished() (reply bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	return g.asked
}
