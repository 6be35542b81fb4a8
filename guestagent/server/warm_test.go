package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// warmingDriver is a fakeDriver with part of its desktop still to come
// up (a Warmer, as a Linux session's AT-SPI): Warm waits for release.
type warmingDriver struct {
	*fakeDriver
	once    sync.Once
	started chan struct{} // closed by the first Warm
	release chan struct{}
}

func (d *warmingDriver) Warm(ctx context.Context) error {
	d.once.Do(func() { close(d.started) })
	select {
	case <-d.release:
		return errors.New("no AT-SPI bus")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestActionsWaitForTheWarmUp: the first hello starts what the desktop
// brings up after it, and is answered without waiting for it, as are the
// requests that only look; a click waits until the warm-up has ended
// (what it may start is then accessible), its failure not the click's,
// and a click cancelled while it waits is never made; ready (announced
// in hello) answers once the warm-up has ended.
func TestActionsWaitForTheWarmUp(t *testing.T) {
	d := &warmingDriver{fakeDriver: &fakeDriver{}, started: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, func(c *Config) { c.Driver = d })
	defer func() {
		select {
		case <-d.release:
		default:
			close(d.release)
		}
	}()

	select {
	case <-d.started:
		t.Fatal("the warm-up started before the first hello")
	default:
	}
	hello, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, helloParams())
	if err != nil {
		t.Fatalf("hello while warming: %v", err)
	}
	if !slices.Contains(hello.Capabilities, protocol.CapReady) {
		t.Errorf("hello's capabilities %v lack %q", hello.Capabilities, protocol.CapReady)
	}
	select {
	case <-d.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first hello did not start the warm-up")
	}
	if _, err := call[protocol.CursorPosition](t, h.cli, protocol.MethodCursorPosition, nil); err != nil {
		t.Fatalf("cursor position while warming: %v", err)
	}

	// A click cancelled while it waits is never made: on a connection of
	// its own, where it is request 1.
	cli := h.dial(t)
	defer cli.Close()
	click := protocol.ClickParams{X: 10, Y: 10, Button: "left"}
	cancelled := make(chan error, 1)
	go func() {
		_, err := call[protocol.Empty](t, cli, protocol.MethodMouseClick, click)
		cancelled <- err
	}()
	time.Sleep(50 * time.Millisecond) // the click is waiting
	if err := cli.Notify(context.Background(), protocol.NotifyCancelRequest, protocol.CancelParams{ID: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-cancelled:
		if codeOf(err) != protocol.CodeCancelled {
			t.Fatalf("a click cancelled while warming = %v, want code %d", err, protocol.CodeCancelled)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a click cancelled while warming was not answered")
	}

	clicked, ready := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := call[protocol.Empty](t, h.cli, protocol.MethodMouseClick, click)
		clicked <- err
	}()
	go func() {
		_, err := call[protocol.Empty](t, h.cli, protocol.MethodReady, nil)
		ready <- err
	}()
	select {
	case err := <-clicked:
		t.Fatalf("a click answered (%v) before the warm-up ended", err)
	case err := <-ready:
		t.Fatalf("ready answered (%v) before the warm-up ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := len(d.clicksMade()); n != 0 {
		t.Fatalf("%d clicks made before the warm-up ended", n)
	}
	close(d.release)
	// The warm-up's failure is neither the click's nor ready's (health
	// reports it).
	for what, answer := range map[string]chan error{"the click": clicked, "ready": ready} {
		select {
		case err := <-answer:
			if err != nil {
				t.Fatalf("%s after a failed warm-up: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not follow the warm-up's end", what)
		}
	}
	if made := d.clicksMade(); len(made) != 1 {
		t.Fatalf("clicks made = %v, want the one not cancelled", made)
	}
}

// clicksMade returns the clicks the driver was asked for.
func (f *fakeDriver) clicksMade() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.clicks)
}
