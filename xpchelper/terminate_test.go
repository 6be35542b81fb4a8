package main

import "testing"

// TestTerminationGate answers issue 16.8 (the helper had no
// applicationShouldTerminate, so a logout skipped its graceful shutdown):
// a logout begins the shutdown once and makes AppKit wait; repeated
// requests wait without beginning again; when the helper has stopped,
// AppKit is answered; a request after that terminates at once; a helper
// that stops by itself (Ctrl+C, `hivecrew-helper stop`) does not answer a
// question nobody asked.
func TestTerminationGate(t *testing.T) {
	var g terminationGate
	if later, begin := g.ask(); !later || !begin {
		t.Fatalf("first request: later=%v begin=%v", later, begin)
	}
	if later, begin := g.ask(); !later || begin {
		t.Fatalf("second request: later=%v begin=%v", later, begin)
	}
	if !g.finished() {
		t.Fatal("AppKit waits for the answer but finished says not to reply")
	}
	if later, begin := g.ask(); later || begin {
		t.Fatalf("request after the stop: later=%v begin=%v", later, begin)
	}

	var alone terminationGate
	if alone.finished() {
		t.Fatal("a helper that stopped by itself replies to no request")
	}
	if later, _ := alone.ask(); later {
		t.Fatal("a request after a stop by itself waits")
	}
}
