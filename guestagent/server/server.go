package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/hivecrew/hivecrew/guestagent/documents"
	"github.com/hivecrew/hivecrew/guestagent/frame"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

// Config configures a Server. SharedDir, Driver and Log are required.
type Config struct {
	// SharedDir is the shared folder (inbox/, outbox/, workspace/), absolute.
	SharedDir string
	Driver    Driver
	Log       *slog.Logger
	// AgentVersion is reported in hello.
	AgentVersion string
	// ShellOutputCap bounds the output run_shell returns per stream; 0 means
	// DefaultShellOutputCap.
	ShellOutputCap int
	// HeartbeatInterval defaults to protocol.HeartbeatIntervalSeconds.
	HeartbeatInterval time.Duration
	// OnShutdown is called once a shutdown request has been answered and the
	// driver powered off (the agent's main exits).
	OnShutdown func()
	// Documents reads the documents read_document reads with the guest's
	// own tools (PDF, Office, OpenDocument, RTF, HEIC); nil reads only
	// text, HTML and the images Go decodes.
	Documents documents.Extractor
	// Key is the boot key the agent proves at hello (protocol.KeyBytes,
	// from the host). Without one, the first hello that carries an
	// enrollKey sets it (macOS guests); until then hello is refused.
	Key []byte
}

// Server serves the guest protocol on any number of connections.
type Server struct {
	cfg Config
	// filesMu guards files, which is nil while the OS refuses the shared
	// folder (macOS: a volume the agent may not yet read).
	filesMu sync.Mutex
	files   *files
	docs    *documents.Reader
	shell   *shellRunner
	start   time.Time
	// png encodes PNG screenshots at the screen's size, scaledPNG scaled
	// ones, each reusing what did not change since its last frame.
	png, scaledPNG frame.Encoder
	// jpeg and scaledJPEG encode JPEG screenshots (the live view's),
	// reusing the bands that did not change since their last frame.
	jpeg, scaledJPEG frame.JPEGEncoder
	// changes notes what changed between captures, for the scalers: the
	// agent's PNGs and the live view's JPEGs (often another size) each
	// have their own, which rescales only what changed since its last.
	changes             frame.Changelog
	pngScale, jpegScale frame.Scaler
	// handlers is the method table, built once and shared by connections.
	handlers handler.Map

	shutdownOnce sync.Once

	// life ends with Close: it bounds what the server began in the
	// background (a Warmer's warm-up).
	life    context.Context
	endLife context.CancelFunc

	// keyMu guards key.
	keyMu sync.Mutex
	key   []byte
}

// New returns a server for cfg. It creates the shared folder's inbox/,
// outbox/ and workspace/ if they are missing.
func New(cfg Config) (*Server, error) {
	if cfg.Driver == nil || cfg.Log == nil {
		return nil, errors.New("guest server: Driver and Log are required")
	}
	if !filepath.IsAbs(cfg.SharedDir) {
		return nil, fmt.Errorf("shared folder %q must be an absolute path", cfg.SharedDir)
	}
	f, err := prepareShared(cfg.SharedDir)
	if errors.Is(err, fs.ErrPermission) {
		// macOS asks before a process reads a volume: the agent runs, the
		// file methods answer that they may not, health_check says so, and
		// the folder is opened at the first use after the grant.
		cfg.Log.Warn("the shared folder is refused: file methods wait for the grant", "err", err)
	} else if err != nil {
		return nil, err
	}
	if cfg.ShellOutputCap <= 0 {
		cfg.ShellOutputCap = DefaultShellOutputCap
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = protocol.HeartbeatIntervalSeconds * time.Second
	}
	if cfg.Key != nil && len(cfg.Key) != protocol.KeyBytes {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("the boot key has %d bytes, want %d", len(cfg.Key), protocol.KeyBytes)
	}
	s := &Server{cfg: cfg, files: f, docs: documents.New(documents.Config{Extractor: cfg.Documents}), start: time.Now(), key: cfg.Key}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.shell = &shellRunner{shared: cfg.SharedDir, outputCap: cfg.ShellOutputCap, notify: s.notifyShell}
	s.handlers = s.methods()
	return s, nil
}

// prepareShared creates the shared folder's inbox/, outbox/ and
// workspace/ if they are missing and opens it.
func prepareShared(dir string) (*files, error) {
	for _, d := range []string{protocol.InboxDir, protocol.OutboxDir, protocol.WorkspaceDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("shared folder: %w", err)
		}
	}
	f, err := openFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("shared folder: %w", err)
	}
	return f, nil
}

// shared returns the open shared folder, opening it if the OS refused it
// before (the grant may have come since).
func (s *Server) shared() (*files, error) {
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	if s.files != nil {
		return s.files, nil
	}
	f, err := prepareShared(s.cfg.SharedDir)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodePermissionDenied, "%s (%s)", err.Error(), sharedGrantHint)
	}
	s.files = f
	return f, nil
}

// sharedGrantHint says where a macOS user allows the shared folder.
const sharedGrantHint = "macOS: System Settings > Privacy & Security > Files and Folders > hivecrew-guestagent: allow Network Volumes and Removable Volumes"

// withShared runs do on the open shared folder.
func withShared[T any](s *Server, do func(*files) (T, error)) (T, error) {
	f, err := s.shared()
	if err != nil {
		var zero T
		return zero, err
	}
	return do(f)
}

// Close releases the shared folder and removes the documents' copies,
// and ends a Warmer's warm-up the server began.
func (s *Server) Close() error {
	s.endLife()
	s.filesMu.Lock()
	defer s.filesMu.Unlock()
	err := s.docs.Close()
	if s.files != nil {
		err = errors.Join(s.files.Close(), err)
	}
	return err
}

// Serve accepts connections on ln until ctx ends, serving each concurrently.
// It returns nil when ctx ends, or the accept error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporaryAcceptError(err) {
				return fmt.Errorf("accept: %w", err)
			}
			// A connection that went before it was accepted, or a
			// process of the guest that used up the descriptors: the
			// listener is fine, so wait a little and accept again
			// rather than exit (the host would lose the agent).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.cfg.Log.Warn("accept failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.ServeConn(ctx, conn); err != nil {
				s.cfg.Log.Info("connection ended", "err", err)
			}
		}()
	}
}

// temporaryAcceptError reports accept errors after which the listener
// still works: ECONNABORTED (the peer went before accept; Go's own
// listeners retry it, a raw vsock listener returns it), EINTR, and running
// out of descriptors or buffers (EMFILE, ENFILE, ENOBUFS, ENOMEM).
func temporaryAcceptError(err error) bool {
	for _, e := range []error{syscall.ECONNABORTED, syscall.EINTR, syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// ServeConn serves one connection until the peer hangs up, the connection
// breaks the protocol (a line over the cap), or ctx ends.
//
// Mouse buttons the connection pressed with mouse_down and did not release
// are released when it ends.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx, h := withHeld(ctx)
	// After the handlers have returned (srv.Wait waits for them).
	defer s.releaseHeld(h)
	srv := jrpc2.NewServer(s.handlers, &jrpc2.ServerOptions{
		AllowPush:   true,
		Concurrency: 32,
		NewContext:  func() context.Context { return ctx },
	})
	srv.Start(transport.Line(conn, conn))
	// Ending the connection, not srv.Stop: jrpc2 v1.3.6 panics when Stop
	// races a request its reader has already received ("send on closed
	// channel"); a closed connection makes the reader stop the server
	// itself.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.heartbeat(ctx, srv)
	}()
	err := srv.Wait()
	stopped := ctx.Err() != nil
	cancel()
	wg.Wait()
	if stopped || errors.Is(err, jrpc2.ErrConnClosed) {
		return nil
	}
	return err
}

func (s *Server) heartbeat(ctx context.Context, srv *jrpc2.Server) {
	t := time.NewTicker(s.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := srv.Notify(ctx, protocol.NotifyHeartbeat, protocol.HeartbeatParams{UptimeSeconds: s.uptime()}); err != nil {
				return
			}
		}
	}
}

func (s *Server) uptime() float64 { return time.Since(s.start).Seconds() }

// notifyShell sends a $/shellOutput notification on the connection of the
// request in ctx.
func (s *Server) notifyShell(ctx context.Context, p protocol.ShellOutputParams) {
	if srv := jrpc2.ServerFromContext(ctx); srv != nil {
		srv.Notify(ctx, protocol.NotifyShellOutput, p)
	}
}

// method adapts a typed function to a jrpc2 handler: params are decoded
// strictly (unknown fields are errors), errors keep their protocol codes.
func method[P, R any](fn func(context.Context, P) (R, error)) jrpc2.Handler {
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		var p P
		if req.HasParams() {
			if err := req.UnmarshalParams(jrpc2.StrictFields(&p)); err != nil {
				return nil, &jrpc2.Error{Code: protocol.CodeInvalidParams, Message: fmt.Sprintf("%s: invalid params: %v", req.Method(), err)}
			}
		}
		r, err := fn(ctx, p)
		if err != nil {
			return nil, transport.ToRPC(err)
		}
		return r, nil
	}
}

// action adapts a function that returns only an error.
func action[P any](fn func(context.Context, P) error) jrpc2.Handler {
	return method(func(ctx context.Context, p P) (protocol.Empty, error) {
		return protocol.Empty{}, fn(ctx, p)
	})
}

type none struct{}

func (s *Server) methods() handler.Map {
	d := s.cfg.Driver
	m := handler.Map{
		protocol.MethodHello:       method(s.hello),
		protocol.MethodHealthCheck: method(func(ctx context.Context, _ none) (protocol.HealthResult, error) { return s.health(ctx) }),
		protocol.MethodShutdown:    action(func(ctx context.Context, _ none) error { s.shutdown(); return nil }),
		protocol.NotifyCancelRequest: func(ctx context.Context, req *jrpc2.Request) (any, error) {
			var p protocol.CancelParams
			if err := req.UnmarshalParams(&p); err != nil || p.ID == nil {
				return nil, nil // a notification gets no answer
			}
			// jrpc2 keys requests by their id's JSON text.
			id, err := json.Marshal(p.ID)
			if srv := jrpc2.ServerFromContext(ctx); err == nil && srv != nil {
				srv.CancelRequest(string(id))
			}
			return nil, nil
		},

		protocol.MethodScreenshot: method(s.screenshot),
		protocol.MethodAccessibilityTree: method(func(ctx context.Context, p protocol.AccessibilityParams) (protocol.AccessibilityResult, error) {
			if p.MaxDepth < 0 {
				return protocol.AccessibilityResult{}, protocol.Errorf(protocol.CodeInvalidParams, "maxDepth must not be negative")
			}
			return d.AccessibilityTree(ctx, p)
		}),
		protocol.MethodFrontmostApp: method(func(ctx context.Context, _ none) (protocol.FrontmostApp, error) { return d.FrontmostApp(ctx) }),
		protocol.MethodRunningApps:  method(func(ctx context.Context, _ none) (protocol.RunningApps, error) { return d.RunningApps(ctx) }),

		protocol.MethodMouseMove: action(func(ctx context.Context, p protocol.PointParams) error {
			if err := s.onScreen(p.X, p.Y); err != nil {
				return err
			}
			return d.MouseMove(ctx, p.X, p.Y)
		}),
		protocol.MethodMouseClick: action(s.click),
		protocol.MethodMouseDown:  action(s.mouseButton(true)),
		protocol.MethodMouseUp:    action(s.mouseButton(false)),
		protocol.MethodCursorPosition: method(func(ctx context.Context, _ none) (protocol.CursorPosition, error) {
			return d.CursorPosition(ctx)
		}),
		protocol.MethodMouseDrag: action(func(ctx context.Context, p protocol.DragParams) error {
			if err := s.onScreen(p.FromX, p.FromY); err != nil {
				return err
			}
			if err := s.onScreen(p.ToX, p.ToY); err != nil {
				return err
			}
			return d.MouseDrag(ctx, p)
		}),
		protocol.MethodScroll: action(s.scroll),
		protocol.MethodKeyboardType: action(func(ctx context.Context, p protocol.TypeParams) error {
			if len(p.Text) > 100_000 {
				return protocol.Errorf(protocol.CodeTooLarge, "keyboard_type takes at most 100000 bytes; write long text with write_file")
			}
			return d.TypeText(ctx, p.Text)
		}),
		protocol.MethodKeyboardKey: action(func(ctx context.Context, p protocol.KeyParams) error {
			key, mods, err := normalizeStroke(p.Key, p.Modifiers)
			if err != nil {
				return err
			}
			return d.PressKey(ctx, key, mods)
		}),
		protocol.MethodHoldKey: action(s.holdKey),

		protocol.MethodOpenApp: action(func(ctx context.Context, p protocol.OpenAppParams) error {
			if p.Name == "" {
				return protocol.Errorf(protocol.CodeInvalidParams, "name is required")
			}
			return d.OpenApp(ctx, p.Name)
		}),
		protocol.MethodOpenFile: action(func(ctx context.Context, p protocol.OpenFileParams) error {
			abs, err := s.sharedFile(p.Path)
			if err != nil {
				return err
			}
			return d.OpenFile(ctx, abs, p.App)
		}),
		protocol.MethodOpenURL: action(func(ctx context.Context, p protocol.OpenURLParams) error {
			if err := checkURL(p.URL); err != nil {
				return err
			}
			return d.OpenURL(ctx, p.URL)
		}),

		protocol.MethodRunShell: method(func(ctx context.Context, p protocol.ShellParams) (protocol.ShellResult, error) {
			var id any
			if raw := transport.RequestID(ctx); raw != nil {
				id = raw
			}
			return s.shell.run(ctx, id, p)
		}),
		protocol.MethodReadFile: method(func(_ context.Context, p protocol.ReadFileParams) (protocol.ReadFileResult, error) {
			return withShared(s, func(f *files) (protocol.ReadFileResult, error) { return f.read(p) })
		}),
		protocol.MethodReadDocument: method(func(ctx context.Context, p protocol.ReadDocumentParams) (protocol.DocumentResult, error) {
			return s.readDocument(ctx, p)
		}),
		protocol.MethodWriteFile: method(func(_ context.Context, p protocol.WriteFileParams) (protocol.WriteFileResult, error) {
			return withShared(s, func(f *files) (protocol.WriteFileResult, error) { return f.write(p) })
		}),
		protocol.MethodListDirectory: method(func(_ context.Context, p protocol.ListDirectoryParams) (protocol.ListDirectoryResult, error) {
			return withShared(s, func(f *files) (protocol.ListDirectoryResult, error) { return f.list(p) })
		}),
		protocol.MethodMoveFile: action(func(_ context.Context, p protocol.MoveFileParams) error {
			_, err := withShared(s, func(f *files) (none, error) { return none{}, f.move(p) })
			return err
		}),

		protocol.MethodClipboardRead: method(func(ctx context.Context, _ none) (protocol.ClipboardText, error) {
			t, err := d.ClipboardRead(ctx)
			return protocol.ClipboardText{Text: t}, err
		}),
		protocol.MethodClipboardWrite: action(func(ctx context.Context, p protocol.ClipboardText) error {
			return d.ClipboardWrite(ctx, p.Text)
		}),
		// ready does nothing itself: like every method that is not an
		// observer's, it is answered once a Warmer is warm (below).
		protocol.MethodReady: action(func(context.Context, none) error { return nil }),
		protocol.MethodWait: action(func(ctx context.Context, p protocol.WaitParams) error {
			if p.Seconds < 0 || p.Seconds > 3600 {
				return protocol.Errorf(protocol.CodeInvalidParams, "seconds must be between 0 and 3600")
			}
			return sleep(ctx, p.Seconds)
		}),
	}
	if r, ok := d.(AppResolver); ok {
		m[protocol.MethodResolveApp] = method(func(ctx context.Context, p protocol.ResolveAppParams) (protocol.ResolvedApp, error) {
			return s.resolveApp(ctx, r, p)
		})
	}
	if w, ok := d.(Warmer); ok {
		for name, h := range m {
			if !observes[name] {
				m[name] = warmFirst(w, h)
			}
		}
	}
	return m
}

// observes are the methods that neither start nor drive a program nor
// read the accessibility tree: they do not wait for a Warmer.
var observes = map[string]bool{
	protocol.MethodHello: true, protocol.MethodHealthCheck: true, protocol.MethodShutdown: true,
	protocol.NotifyCancelRequest: true, protocol.MethodScreenshot: true, protocol.MethodCursorPosition: true,
	protocol.MethodFrontmostApp: true, protocol.MethodRunningApps: true, protocol.MethodResolveApp: true,
	protocol.MethodReadFile: true, protocol.MethodWriteFile: true, protocol.MethodListDirectory: true,
	protocol.MethodMoveFile: true, protocol.MethodClipboardRead: true, protocol.MethodClipboardWrite: true,
	protocol.MethodWait: true,
}

// warmFirst runs h once w is warm (or has failed to be, which is not h's
// error), unless the request is cancelled first.
func warmFirst(w Warmer, h jrpc2.Handler) jrpc2.Handler {
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		if err := w.Warm(ctx); err != nil && ctx.Err() != nil {
			return nil, transport.ToRPC(ctx.Err())
		}
		return h(ctx, req)
	}
}
