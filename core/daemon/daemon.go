package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/reveal"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
)

// MakeRunKeyName names the API key `serve --print-api-key` replaces on each start.
const MakeRunKeyName = "make run"

// shutdownGrace bounds how long in-flight requests may take once shutdown starts.
const shutdownGrace = 5 * time.Second

const (
	// headerTimeout closes a connection that has not sent its request's
	// headers in time; idleTimeout one kept alive without a new request.
	// Neither bounds a response (event streams last as long as the page).
	headerTimeout = 10 * time.Second
	idleTimeout   = time.Minute
	// maxTCPConns caps the TCP connections served at once (fewer when the
	// descriptor limit is low: a quarter of it), with
	// golang.org/x/net/netutil.LimitListener. Beyond it, new ones wait in
	// the kernel's queue, holding none of the helper's descriptors, so no
	// number of local clients can take the descriptors that VMs, the store
	// and the unix socket (the CLI and the kill switch) need.
	maxTCPConns = 1024
)

// tcpConnLimit is maxTCPConns, or a quarter of the descriptor limit when
// that is lower. (Go raises the soft limit to the hard one at start.)
func tcpConnLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur/4 < maxTCPConns {
		return max(int(rl.Cur/4), 16)
	}
	return maxTCPConns
}

// newHTTPServer returns a server with the helper's timeouts.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout}
}

// Config configures Run. Paths and Log are required.
type Config struct {
	Paths config.Paths
	// Addr is the TCP listen address; empty means 127.0.0.1:<apiPort setting>.
	Addr string
	// Socket is the unix socket path; empty means Paths.Socket().
	Socket string
	// PrintAPIKey replaces the "make run" API key and prints the new one.
	PrintAPIKey bool
	// Stdout receives the banner; nil means no banner.
	Stdout io.Writer
	Log    *slog.Logger
	// GuestAgent is the guest agent binary for sandboxes; default
	// hivecrew-guestagent next to the running executable.
	GuestAgent string
	// Backend overrides the platform's VM backend (tests use the fake).
	Backend vm.Backend
	// LLMBackoff is the first retry wait of LLM calls; default 1 s.
	LLMBackoff time.Duration
	// WebhookBackoff is the first retry wait of webhooks; default 1 s.
	WebhookBackoff time.Duration
	// WebStepUp is how long after its login link a web session may change
	// API keys, providers and safety settings; default 10 minutes.
	WebStepUp time.Duration
	// PairingTTL is how long a device's pairing code waits for the
	// user; default 5 minutes.
	PairingTTL time.Duration
	// DrainTimeout bounds the shutdown of agents and VMs; default 30 s.
	DrainTimeout time.Duration
	// MaxUploadBytes, if set, caps a request with files in place of
	// Settings' maxUploadMB (for tests).
	MaxUploadBytes int64
	// Launch, if set, opens a task's output or its folder in place of the
	// desktop's opener (for tests).
	Launch reveal.Launch
}

// Run runs the helper until ctx is cancelled or a stop request arrives, then
// drains and returns. The returned error says why it could not start or what
// failed while running; a clean stop returns nil.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Log == nil || cfg.Paths.Home == "" {
		return errors.New("daemon: Paths and Log are required")
	}
	log := cfg.Log
	if err := cfg.Paths.Ensure(); err != nil {
		return err
	}
	// LIFO teardown, joined into the returned error.
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanups[i]())
		}
	}()

	unlock, err := lockHome(cfg.Paths)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, unlock)

	// The store and the TCP port come first: a helper that cannot have
	// them fails before its unix socket answers /health, so a CLI that
	// started it hears why instead of a helper that goes away.
	st, err := store.Open(ctx, cfg.Paths.Database(), log)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, st.Close)
	defaults := config.Defaults(runtime.GOOS, userHome())
	settings, err := st.LoadSettings(ctx, defaults)
	if err != nil {
		return err
	}

	addr := cfg.Addr
	if addr == "" {
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(settings.APIPort))
	}
	tcpLn, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (change apiPort in Settings or pass --addr): %w", addr, err)
	}

	sockPath := cfg.Socket
	if sockPath == "" {
		sockPath = cfg.Paths.Socket()
	}
	unixLn, err := listenUnix(sockPath)
	if err != nil {
		tcpLn.Close()
		return err
	}
	cleanups = append(cleanups, func() error {
		if err := os.Remove(sockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove socket: %w", err)
		}
		return nil
	})

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := newServer(log, stop)
	serveErr := make(chan error, 2)
	// The unix socket has its own server and listener: TCP clients, however
	// many, never queue ahead of the CLI or the kill switch.
	unixSrv := newHTTPServer(srv.handler(true))
	go func() { serveErr <- serve(unixSrv, unixLn) }()
	cleanups = append(cleanups, shutdownFunc(unixSrv, "unix socket"))

	tcpSrv := newHTTPServer(srv.handler(false))
	go func() { serveErr <- serve(tcpSrv, netutil.LimitListener(tcpLn, tcpConnLimit())) }()
	cleanups = append(cleanups, shutdownFunc(tcpSrv, "tcp"))

	var key string
	if cfg.PrintAPIKey {
		if key, _, err = st.ReplaceAPIKey(ctx, MakeRunKeyName); err != nil {
			return err
		}
	}

	c, err := startCore(ctx, cfg, st, defaults, settings, browserURL(tcpLn.Addr()))
	if err != nil {
		return err
	}
	cleanups = append(cleanups, c.stop)
	srv.mount(c.api)
	srv.markReady()
	log.Info("helper ready", "home", cfg.Paths.Home, "socket", sockPath, "addr", tcpLn.Addr().String(), "backend", c.backend)
	if cfg.Stdout != nil {
		printBanner(cfg.Stdout, cfg.Paths, sockPath, tcpLn.Addr().String(), key)
	}

	select {
	case <-ctx.Done():
		log.Info("helper stopping")
		return nil
	case err := <-serveErr:
		return err
	case err := <-c.failed:
		return err
	}
}

func printBanner(w io.Writer, paths config.Paths, sock, addr, key string) {
	fmt.Fprintf(w, "Hivecrew helper is running.\n")
	fmt.Fprintf(w, "  API:         http://%s/api/v1   (health check: http://%s/health)\n", addr, addr)
	fmt.Fprintf(w, "  Unix socket: %s\n", sock)
	fmt.Fprintf(w, "  Data:        %s\n", paths.Home)
	if key != "" {
		fmt.Fprintf(w, "  API key:     %s\n", key)
	}
	fmt.Fprintf(w, "Press Ctrl+C to stop.\n")
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

func shutdownFunc(srv *http.Server, name string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		err := srv.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			// The grace is over: what is still open is cut. That includes
			// connections a client dialled but never used (net/http waits
			// for those until they are 5 s old), which is not a failure.
			srv.Close()
			return nil
		}
		if err != nil {
			return fmt.Errorf("shut down %s listener: %w", name, err)
		}
		return nil
	}
}

func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// lockHome takes an exclusive lock on the data directory so that two helpers
// never share one store and socket.
func lockHome(paths config.Paths) (func() error, error) {
	path := filepath.Join(paths.Home, "helper.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another Hivecrew helper is running for %s", paths.Home)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil // closing releases the lock
}

// maxSocketPath is the portable limit of sun_path (104 on macOS, 108 on Linux).
const maxSocketPath = 103

// listenUnix listens on a fresh unix socket readable only by this user. The
// caller holds the data directory lock, so a socket file left there is stale.
func listenUnix(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d-byte limit of unix sockets: choose a shorter data directory or --socket", path, len(path), maxSocketPath)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // removed by Run's teardown
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict socket: %w", err)
	}
	return ln, nil
}

// browserURL is the base of the links the helper hands out (`hivecrew
// open`'s login link) for the address it listens on: a helper listening
// on every address ("0.0.0.0", "[::]") is opened at loopback, which it
// also listens on, not at an address no browser can open.
func browserURL(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err == nil && ap.Addr().IsUnspecified() {
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port())
	}
	if err != nil {
		return "http://" + a.String()
	}
	return "http://" + ap.String()
}
