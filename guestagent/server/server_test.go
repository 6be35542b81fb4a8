package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/png" // decode the screenshots
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"go.uber.org/goleak"

	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

// fakeDriver records input calls; the real drivers are tested end to end.
type fakeDriver struct {
	mu     sync.Mutex
	clicks []string
	keys   []string
	// input is every input call, in order, as text ("down left",
	// "move 3,4", "keydown shift+a", "scroll control+1,2").
	input []stamped
	// x, y is where the pointer is.
	x, y float64
}

// stamped is an input call and when it was made.
type stamped struct {
	what string
	at   time.Time
}

func (f *fakeDriver) record(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.input = append(f.input, stamped{what, time.Now()})
}

// inputs returns the input calls recorded so far.
func (f *fakeDriver) inputs() []stamped {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.input)
}

func (f *fakeDriver) Describe(context.Context) (Description, error) {
	return Description{OS: "linux", OSVersion: "test", Screen: protocol.Screen{Width: 1024, Height: 768, Scale: 1},
		Capabilities: []string{protocol.CapScreenshot, protocol.CapInput}}, nil
}
func (f *fakeDriver) Screen() protocol.Screen {
	return protocol.Screen{Width: 1024, Height: 768, Scale: 1}
}
func (f *fakeDriver) Capture(context.Context) (image.Image, error) {
	img := image.NewRGBA(image.Rect(0, 0, 1024, 768))
	for y := range 768 {
		for x := range 1024 {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	return img, nil
}
func (f *fakeDriver) AccessibilityTree(context.Context, protocol.AccessibilityParams) (protocol.AccessibilityResult, error) {
	return protocol.AccessibilityResult{}, nil
}
func (f *fakeDriver) FrontmostApp(context.Context) (protocol.FrontmostApp, error) {
	return protocol.FrontmostApp{}, nil
}
func (f *fakeDriver) RunningApps(context.Context) (protocol.RunningApps, error) {
	return protocol.RunningApps{}, nil
}
func (f *fakeDriver) MouseMove(_ context.Context, x, y float64) error {
	f.mu.Lock()
	f.x, f.y = x, y
	f.mu.Unlock()
	f.record(fmt.Sprintf("move %g,%g", x, y))
	return nil
}
func (f *fakeDriver) MouseClick(_ context.Context, x, y float64, b string, n int, mods []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clicks = append(f.clicks, strings.Join(append(mods, b+":"+string(rune('0'+n))), "+"))
	return nil
}
func (f *fakeDriver) MouseDrag(context.Context, protocol.DragParams) error { return nil }
func (f *fakeDriver) MouseButton(_ context.Context, b string, down bool) error {
	f.record(map[bool]string{true: "down ", false: "up "}[down] + b)
	return nil
}
func (f *fakeDriver) CursorPosition(context.Context) (protocol.CursorPosition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return protocol.CursorPosition{X: f.x, Y: f.y}, nil
}
func (f *fakeDriver) Scroll(_ context.Context, p protocol.ScrollParams) error {
	f.record(fmt.Sprintf("scroll %s%g,%g", strings.Join(append(p.Modifiers, ""), "+"), p.DeltaX, p.DeltaY))
	return nil
}
func (f *fakeDriver) TypeText(context.Context, string) error { return nil }
func (f *fakeDriver) PressKey(_ context.Context, key string, mods []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, strings.Join(append(mods, key), "+"))
	return nil
}
func (f *fakeDriver) KeyDown(_ context.Context, key string, mods []string) (func(context.Context) error, error) {
	stroke := strings.Join(append(slices.Clone(mods), key), "+")
	f.record("keydown " + stroke)
	return func(ctx context.Context) error {
		if ctx.Err() != nil {
			return fmt.Errorf("release %s with a dead context: %w", stroke, ctx.Err())
		}
		f.record("keyup " + stroke)
		return nil
	}, nil
}
func (f *fakeDriver) OpenApp(context.Context, string) error          { return nil }
func (f *fakeDriver) OpenFile(context.Context, string, string) error { return nil }
func (f *fakeDriver) OpenURL(context.Context, string) error          { return nil }
func (f *fakeDriver) ClipboardRead(context.Context) (string, error)  { return "", nil }
func (f *fakeDriver) ClipboardWrite(context.Context, string) error   { return nil }
func (f *fakeDriver) PowerOff(context.Context) error                 { return nil }

type harness struct {
	srv     *Server
	shared  string
	sock    string
	drv     *fakeDriver
	notes   chan *jrpc2.Request
	cli     *jrpc2.Client
	stopSrv context.CancelFunc
	served  chan error
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "ga")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &harness{shared: filepath.Join(dir, "shared"), sock: filepath.Join(dir, "a.sock"), drv: &fakeDriver{}, notes: make(chan *jrpc2.Request, 1024)}
	cfg := Config{SharedDir: h.shared, Driver: h.drv, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), AgentVersion: "test", Key: testKey}
	if mutate != nil {
		mutate(&cfg)
	}
	h.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopSrv = cancel
	h.served = make(chan error, 1)
	go func() { h.served <- h.srv.Serve(ctx, ln) }()
	h.cli = h.dial(t)
	t.Cleanup(func() {
		h.cli.Close()
		cancel()
		if err := <-h.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		h.srv.Close()
	})
	return h
}

func (h *harness) dial(t *testing.T) *jrpc2.Client {
	conn, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	return jrpc2.NewClient(transport.Line(conn, conn), &jrpc2.ClientOptions{
		OnNotify: func(r *jrpc2.Request) {
			select {
			case h.notes <- r:
			default:
			}
		},
	})
}

func call[R any](t *testing.T, c *jrpc2.Client, method string, params any) (R, error) {
	t.Helper()
	var r R
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.CallResult(ctx, method, params, &r)
	return r, transport.FromRPC(err)
}

func codeOf(err error) int {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return 0
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey is the boot key of the test servers.
var testKey = bytes.Repeat([]byte{0x5a}, protocol.KeyBytes)

// helloParams is a version-2 hello with a fresh challenge.
func helloParams() protocol.HelloParams {
	c := make([]byte, protocol.ChallengeBytes)
	rand.Read(c)
	return protocol.HelloParams{ProtocolVersion: protocol.Version, Challenge: c}
}

// TestHelloEnrollsOnce: an agent started without a key (macOS guests)
// refuses hello until a hello enrolls one, proves that one from then on,
// on every connection, and refuses to take another: whoever enrolled first
// at boot (the host) keeps it.
func TestHelloEnrollsOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Key = nil })
	if _, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, helloParams()); codeOf(err) != protocol.CodePermissionDenied {
		t.Fatalf("hello to an agent with no key = %v, want permission denied", err)
	}
	first := helloParams()
	first.EnrollKey = testKey
	hello, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, first)
	if err != nil || !hmac.Equal(hello.Proof, protocol.HelloProof(testKey, first.Challenge)) {
		t.Fatalf("enrolling hello = %+v, %v", hello, err)
	}
	c2 := h.dial(t)
	defer c2.Close()
	p := helloParams()
	if hello, err := call[protocol.HelloResult](t, c2, protocol.MethodHello, p); err != nil || !hmac.Equal(hello.Proof, protocol.HelloProof(testKey, p.Challenge)) {
		t.Fatalf("hello on a new connection = %+v, %v", hello, err)
	}
	thief := helloParams()
	thief.EnrollKey = bytes.Repeat([]byte{7}, protocol.KeyBytes)
	if _, err := call[protocol.HelloResult](t, c2, protocol.MethodHello, thief); codeOf(err) != protocol.CodePermissionDenied {
		t.Fatalf("enrolling a second key = %v, want permission denied", err)
	}
}

func TestHelloAndProtocolErrors(t *testing.T) {
	h := newHarness(t, nil)
	p := helloParams()
	hello, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, p)
	if err != nil {
		t.Fatal(err)
	}
	if hello.ProtocolVersion != protocol.Version || hello.OS != "linux" || hello.Screen.Width != 1024 || hello.SharedPath != h.shared {
		t.Fatalf("hello = %+v", hello)
	}
	if !hmac.Equal(hello.Proof, protocol.HelloProof(testKey, p.Challenge)) {
		t.Fatalf("hello's proof %x does not prove the boot key", hello.Proof)
	}
	if _, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, protocol.HelloParams{ProtocolVersion: protocol.Version}); codeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("hello without a challenge = %v, want invalid params", err)
	}
	// An agent started with its key refuses to take another.
	other := helloParams()
	other.EnrollKey = bytes.Repeat([]byte{1}, protocol.KeyBytes)
	if _, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, other); codeOf(err) != protocol.CodePermissionDenied {
		t.Fatalf("hello enrolling another key = %v, want permission denied", err)
	}
	for _, d := range []string{"inbox", "outbox", "workspace"} {
		if fi, err := os.Stat(filepath.Join(h.shared, d)); err != nil || !fi.IsDir() {
			t.Fatalf("shared/%s not created: %v", d, err)
		}
	}
	if _, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, protocol.HelloParams{ProtocolVersion: 1, Challenge: p.Challenge}); codeOf(err) != protocol.CodeVersionMismatch {
		t.Fatalf("hello with version 0 = %v, want version mismatch", err)
	}
	if _, err := call[any](t, h.cli, "no_such_method", nil); codeOf(err) != protocol.CodeMethodNotFound {
		t.Fatalf("unknown method = %v, want -32601", err)
	}
	for _, bad := range []any{
		map[string]any{"x": 1, "y": 2, "colour": "red"},
		map[string]any{"x": "one", "y": 2},
		[]int{1, 2},
	} {
		if _, err := call[any](t, h.cli, protocol.MethodMouseClick, bad); codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("mouse_click %v = %v, want -32602", bad, err)
		}
	}
	for _, p := range []protocol.ClickParams{{X: 2000, Y: 1}, {X: 1, Y: 1, Button: "fourth"}, {X: 1, Y: 1, ClickType: "quadruple"}} {
		if _, err := call[any](t, h.cli, protocol.MethodMouseClick, p); codeOf(err) != protocol.CodeInvalidParams {
			t.Errorf("mouse_click %+v = %v, want -32602", p, err)
		}
	}
	if _, err := call[any](t, h.cli, protocol.MethodMouseClick, protocol.ClickParams{X: 10, Y: 10, Button: "right", ClickType: "double"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "Enter", Modifiers: []string{"cmd", "Shift"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodKeyboardKey, protocol.KeyParams{Key: "hyper"}); codeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("unknown key = %v", err)
	}
	if _, err := call[any](t, h.cli, protocol.MethodOpenURL, protocol.OpenURLParams{URL: "file:///etc/passwd"}); codeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("file: URL = %v, want refused", err)
	}
	h.drv.mu.Lock()
	defer h.drv.mu.Unlock()
	if len(h.drv.clicks) != 1 || h.drv.clicks[0] != "right:2" || len(h.drv.keys) != 1 || h.drv.keys[0] != "command+shift+return" {
		t.Fatalf("driver saw clicks %v keys %v", h.drv.clicks, h.drv.keys)
	}
}

func TestScreenshotSizes(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range []struct {
		p    protocol.ScreenshotParams
		w, h int
	}{
		{protocol.ScreenshotParams{}, 1024, 768},
		{protocol.ScreenshotParams{Format: "jpeg", Quality: 70}, 1024, 768},
		{protocol.ScreenshotParams{Format: "png", MaxWidth: 512}, 512, 384},
		{protocol.ScreenshotParams{Format: "jpeg", MaxWidth: 800, MaxHeight: 300}, 400, 300},
	} {
		res, err := call[protocol.ScreenshotResult](t, h.cli, protocol.MethodScreenshot, c.p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(strings.NewReader(string(res.Data)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Width != c.w || res.Height != c.h || cfg.Width != c.w || cfg.Height != c.h || format != res.Format {
			t.Errorf("%+v: result %dx%d %s, image %dx%d %s; want %dx%d", c.p, res.Width, res.Height, res.Format, cfg.Width, cfg.Height, format, c.w, c.h)
		}
	}
	if _, err := call[any](t, h.cli, protocol.MethodScreenshot, protocol.ScreenshotParams{Format: "gif"}); codeOf(err) != protocol.CodeInvalidParams {
		t.Fatalf("gif = %v", err)
	}
}

func TestConcurrentRequestsAndCancel(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	// A long wait does not hold up other requests on the same connection.
	waitDone := make(chan error, 1)
	go func() {
		_, err := h.cli.Call(ctx, protocol.MethodWait, protocol.WaitParams{Seconds: 30})
		waitDone <- transport.FromRPC(err)
	}()
	time.Sleep(50 * time.Millisecond)
	t0 := time.Now()
	if _, err := call[protocol.HelloResult](t, h.cli, protocol.MethodHello, helloParams()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 500*time.Millisecond {
		t.Fatalf("hello took %s behind a running wait", d)
	}
	// $/cancelRequest with the wait's id (the client numbers requests from 1).
	t0 = time.Now()
	if err := h.cli.Notify(ctx, protocol.NotifyCancelRequest, protocol.CancelParams{ID: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitDone:
		if codeOf(err) != protocol.CodeCancelled {
			t.Fatalf("cancelled wait = %v, want code %d", err, protocol.CodeCancelled)
		}
		if d := time.Since(t0); d > 200*time.Millisecond {
			t.Fatalf("cancel took %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait was not cancelled")
	}
}

func TestHeartbeat(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HeartbeatInterval = 30 * time.Millisecond })
	deadline := time.After(2 * time.Second)
	beats := 0
	for beats < 3 {
		select {
		case n := <-h.notes:
			if n.Method() == protocol.NotifyHeartbeat {
				var p protocol.HeartbeatParams
				if err := n.UnmarshalParams(&p); err != nil || p.UptimeSeconds <= 0 {
					t.Fatalf("heartbeat params %v, %v", p, err)
				}
				beats++
			}
		case <-deadline:
			t.Fatalf("%d heartbeats in 2 s at a 30 ms interval", beats)
		}
	}
}

func TestOverlongAndMalformedLines(t *testing.T) {
	h := newHarness(t, nil)
	conn, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Malformed JSON is answered with a parse error; the connection goes on.
	conn.Write([]byte("{not json\n"))
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "-32700") {
		t.Fatalf("malformed line answered %q, %v", buf[:n], err)
	}
	// A line over 64 MiB closes the connection.
	big := make([]byte, protocol.MaxLineBytes+2)
	for i := range big {
		big[i] = 'a'
	}
	big[len(big)-1] = '\n'
	go conn.Write(big)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		if _, err := conn.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("connection still open after an overlong line")
			}
			break
		}
	}
	// The agent itself is fine: a new connection works.
	c2 := h.dial(t)
	defer c2.Close()
	if _, err := call[protocol.HelloResult](t, c2, protocol.MethodHello, helloParams()); err != nil {
		t.Fatalf("after an overlong line: %v", err)
	}
}

func TestRawRequestIDsAreStrings(t *testing.T) {
	// Hosts may use string ids; cancellation must work with them too.
	h := newHarness(t, nil)
	conn, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(`{"jsonrpc":"2.0","id":"w-1","method":"wait","params":{"seconds":30}}` + "\n"))
	time.Sleep(50 * time.Millisecond)
	conn.Write([]byte(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"w-1"}}` + "\n"))
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	dec := json.NewDecoder(conn)
	for {
		var msg struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if err := dec.Decode(&msg); err != nil {
			t.Fatalf("no answer to the cancelled request: %v", err)
		}
		if string(msg.ID) == `"w-1"` {
			if msg.Error == nil || msg.Error.Code != protocol.CodeCancelled {
				t.Fatalf("answer %+v, want cancelled", msg)
			}
			return
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
