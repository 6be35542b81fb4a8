package server

import (
	"context"
	"crypto/hmac"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

// flakyListener fails its next Accepts with errs (as the kernel reports
// them: *net.OpError around an errno) before accepting from the real one.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	errs  []error
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.fails++
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "vsock", Err: os.NewSyscallError("accept", err)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptErrorsAreSurvived answers issue 16.8 (the guest agent's accept
// loop gave up on ECONNABORTED): a connection the host dropped before the
// agent accepted it, or a guest process that used up the agent's
// descriptors (EMFILE: a hostile program opening connections), must not
// end the agent, or the host loses its guest for good. The agent backs off
// and accepts the next connection, which then works; an error the
// listener cannot recover from still ends Serve, and so does ctx.
func TestAcceptErrorsAreSurvived(t *testing.T) {
	dir, _ := os.MkdirTemp("", "hc-accept-")
	defer os.RemoveAll(dir)
	srv, err := New(Config{SharedDir: filepath.Join(dir, "shared"), Driver: &fakeDriver{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), AgentVersion: "test", Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sock := filepath.Join(dir, "a.sock")
	real, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: real, errs: []error{syscall.ECONNABORTED, syscall.ECONNABORTED, syscall.EMFILE, syscall.EINTR, syscall.ENFILE}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	cli := jrpc2.NewClient(transport.Line(conn, conn), nil)
	p := helloParams()
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	var hello protocol.HelloResult
	if err := cli.CallResult(hctx, protocol.MethodHello, p, &hello); err != nil || !hmac.Equal(hello.Proof, protocol.HelloProof(testKey, p.Challenge)) {
		t.Fatalf("hello after failed accepts: %v", err)
	}
	cli.Close()
	ln.mu.Lock()
	fails := ln.fails
	ln.mu.Unlock()
	if fails != 5 {
		t.Fatalf("%d injected accept errors seen, want 5", fails)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve ended: %v", err)
	default:
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}

	// A broken listener (EBADF, EINVAL) ends Serve with the error.
	real2, err := net.Listen("unix", filepath.Join(dir, "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer real2.Close()
	bad := &flakyListener{Listener: real2, errs: []error{syscall.EBADF}}
	err = srv.Serve(context.Background(), bad)
	if !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Serve on a broken listener = %v", err)
	}

	// Backing off ends at once with ctx.
	real3, err := net.Listen("unix", filepath.Join(dir, "c.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer real3.Close()
	many := make([]error, 1000)
	for i := range many {
		many[i] = syscall.EMFILE
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel3()
	start := time.Now()
	if err := srv.Serve(ctx3, &flakyListener{Listener: real3, errs: many}); err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("Serve under EMFILE until ctx ends: %v after %v", err, time.Since(start))
	}
}
