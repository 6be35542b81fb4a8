package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm/fake"
)

type running struct {
	paths  config.Paths
	addr   string // TCP host:port
	apiKey string
	done   chan error
	cancel context.CancelFunc
}

var (
	apiLine = regexp.MustCompile(`API:\s+http://(\S+)/api/v1`)
	keyLine = regexp.MustCompile(`API key:\s+(hc_\S+)`)
)

// tempHome returns a new data directory with a short path (unix socket paths
// are limited to ~104 bytes).
func tempHome(t *testing.T) string {
	home, err := os.MkdirTemp("", "hc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	return home
}

// start runs the helper in-process on the data directory home and returns
// once its banner is printed (that is, once it is ready).
func start(t *testing.T, home string, printKey bool) *running {
	t.Helper()
	r := &running{paths: config.Paths{Home: home}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		err := Run(ctx, Config{
			Paths: r.paths, Addr: "127.0.0.1:0", PrintAPIKey: printKey, Stdout: pw,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Backend: fake.New(fake.Options{}),
		})
		pw.Close()
		r.done <- err
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			r.addr = m[1]
		}
		if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
			r.apiKey = m[1]
		}
		if strings.HasPrefix(sc.Text(), "Press Ctrl+C") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if r.addr == "" {
		cancel()
		t.Fatalf("helper did not start: %v", <-r.done)
	}
	return r
}

func (r *running) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("helper did not stop within 10 s")
	}
}

func TestHelperServesHealthAndStopsOnRequest(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := start(t, tempHome(t), true)
	ctx := context.Background()

	c := client.NewUnix(r.paths.Socket())
	if err := c.Health(ctx); err != nil {
		t.Fatalf("health over the unix socket: %v", err)
	}
	fi, err := os.Stat(r.paths.Socket())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if err := client.NewTCP("http://"+r.addr, "").Health(ctx); err != nil {
		t.Fatalf("health over TCP: %v", err)
	}

	// Without a key, the API refuses; with one, an unknown route is a 404.
	resp, err := http.Get("http://" + r.addr + "/api/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.addr+"/api/v1/nothing", nil)
	req.Header.Set("Authorization", "Bearer "+r.apiKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Message, Code string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || body.Error.Code != "not_found" || body.Error.Message == "" {
		t.Fatalf("unknown route: %d %+v, want 404 with a JSON error", resp.StatusCode, body)
	}
	// The stop request is only offered on the unix socket.
	resp, err = http.Post("http://"+r.addr+"/internal/v1/shutdown", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("shutdown over TCP answered %d, want 404", resp.StatusCode)
	}

	// A second helper on the same data directory is refused.
	err = Run(ctx, Config{Paths: r.paths, Addr: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Backend: fake.New(fake.Options{})})
	if err == nil || !strings.Contains(err.Error(), "another Hivecrew helper is running") {
		t.Fatalf("second helper: %v", err)
	}

	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r.wait(t)
	if _, err := os.Stat(r.paths.Socket()); !os.IsNotExist(err) {
		t.Fatalf("socket left behind after stop: %v", err)
	}
	if err := c.Health(ctx); err == nil {
		t.Fatal("helper still answers after stop")
	}
}

func TestHelperPrintsAWorkingAPIKeyAndReplacesIt(t *testing.T) {
	defer goleak.VerifyNone(t)
	home := tempHome(t)
	var keys []string
	for range 2 {
		r := start(t, home, true)
		if r.apiKey == "" {
			t.Fatal("no API key printed")
		}
		keys = append(keys, r.apiKey)
		r.cancel()
		r.wait(t)
	}
	if keys[0] == keys[1] {
		t.Fatalf("the same key was printed twice: %s", keys[0])
	}

	st, err := store.Open(context.Background(), filepath.Join(home, "hivecrew.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.VerifyAPIKey(context.Background(), keys[1]); err != nil {
		t.Fatalf("printed key does not verify: %v", err)
	}
	if _, err := st.VerifyAPIKey(context.Background(), keys[0]); err == nil {
		t.Fatal("the previous run's key still verifies")
	}
}

func TestHelperRefusesAnOverlongSocketPath(t *testing.T) {
	home := t.TempDir()
	err := Run(context.Background(), Config{
		Paths: config.Paths{Home: home}, Addr: "127.0.0.1:0", Socket: filepath.Join(home, strings.Repeat("s", 120)),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err == nil || !strings.Contains(err.Error(), "limit of unix sockets") {
		t.Fatalf("overlong socket path: %v", err)
	}
}

// TestStopsCleanlyWithAnUnusedConnection: a client that dialled the API
// and sent nothing (HTTP clients do, racing a dial against an idle
// connection) does not make the helper's stop fail: net/http waits for
// such a connection until it is 5 s old, past the shutdown grace, and the
// helper then cuts it instead of reporting an error.
func TestStopsCleanlyWithAnUnusedConnection(t *testing.T) {
	r := start(t, tempHome(t), false)
	conn, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(100 * time.Millisecond) // accepted: a new connection on the server
	began := time.Now()
	r.cancel()
	r.wait(t)
	if took := time.Since(began); took > shutdownGrace+2*time.Second {
		t.Errorf("stop took %s", took)
	}
}

func TestBrowserURLOfEveryAddress(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:8423":   "http://127.0.0.1:8423",
		"[::]:8423":      "http://127.0.0.1:8423",
		"127.0.0.1:5482": "http://127.0.0.1:5482",
		"192.0.2.2:5482": "http://192.0.2.2:5482",
		"[::1]:5482":     "http://[::1]:5482",
	} {
		if got := browserURL(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(in))); got != want {
			t.Errorf("listening on %s: links to %s, want %s", in, got, want)
		}
	}
}
