package faults

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestIdleConnectionsCannotLockTheUserOut answers issue 15.5: about 20,000
// idle, unauthenticated TCP connections to /health used up the helper's
// descriptors; then the unix socket did not answer either, the CLI said
// the helper was not running, and the kill switch could not be reached.
// Here a local process opens as many idle connections as its own
// descriptor limit allows (20,000 less what it needs itself). The helper
// holds at most its cap of them; stop-all and a health check over the
// unix socket answer within 1 s meanwhile; once the flood ends, TCP
// serves again.
func TestIdleConnectionsCannotLockTheUserOut(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)

	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	want := min(20000, int(rl.Max)-200)
	var (
		mu    sync.Mutex
		conns []net.Conn
		tried atomic.Int64
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Connections past the helper's cap wait in the kernel's queue, and
	// past that queue they are not accepted at all: dial with a short
	// timeout, in parallel, and keep what connects.
	var wg sync.WaitGroup
	for range 512 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tried.Add(1) <= int64(want) {
				c, err := net.DialTimeout("tcp", h.proc.Addr, 500*time.Millisecond)
				if err != nil {
					continue
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d of %d idle connections connected", len(conns), want)
	if len(conns) < 4000 {
		t.Fatalf("only %d connections: the flood is too small to mean anything", len(conns))
	}

	fds, err := os.ReadDir("/proc/" + strconv.Itoa(h.pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) > 1024+256 {
		t.Errorf("the helper holds %d descriptors under the flood; its TCP cap is 1024", len(fds))
	}
	for _, what := range []string{"health", "stop-all"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		if what == "health" {
			err = h.unix.Health(ctx)
		} else {
			_, err = h.unix.StopAll(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("%s over the unix socket under the flood: %v (after %s)", what, err, time.Since(start))
		}
		t.Logf("%s over the unix socket under %d idle connections: %s", what, len(conns), time.Since(start).Round(time.Millisecond))
	}

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	hc := &http.Client{Timeout: 15 * time.Second}
	resp, err := hc.Get("http://" + h.proc.Addr + "/health")
	if err != nil {
		t.Fatalf("TCP /health after the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("TCP /health after the flood: %s", resp.Status)
	}
}
