package vm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

func TestStartGuard(t *testing.T) {
	var g StartGuard
	if err := g.Abort(context.Background()); err != nil {
		t.Fatalf("abort without a start: %v", err)
	}
	ctx, end, err := g.Begin(context.Background(), "m1")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		<-ctx.Done() // the start follows its context
		end()
		close(ended)
	}()
	if err := g.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Abort returned before the start ended")
	}
	// A start that ignores its context makes Abort wait until ctx ends.
	_, end2, _ := g.Begin(context.Background(), "m1")
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Abort(short); err == nil {
		t.Fatal("Abort did not report a start that would not end")
	}
	end2()
	if err := g.Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Begin(context.Background(), "m1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Begin after Delete: %v", err)
	}
}
