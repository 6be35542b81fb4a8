package guest

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/fake"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startFake(t *testing.T) vm.Machine {
	t.Helper()
	b := fake.New(fake.Options{})
	m, err := b.Create(context.Background(), vm.Spec{ID: "g", Dir: t.TempDir() + "/g", Template: vm.Template{Kind: vm.KindHost}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Delete(context.Background()) })
	return m
}

func TestReconnectsAfterTheGuestRestarts(t *testing.T) {
	ctx := context.Background()
	m := startFake(t)
	c, err := Connect(ctx, Config{Dial: m.DialGuest, Key: m.GuestKey, Log: quiet(), HeartbeatTimeout: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Healthy() || c.Hello().OS != "linux" {
		t.Fatalf("healthy=%v hello=%+v", c.Healthy(), c.Hello())
	}
	lost := c.Lost()
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("connection loss not noticed")
	}
	// Calls fail fast and clearly while the guest is away.
	if err := c.Call(ctx, protocol.MethodHealthCheck, nil, nil); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("call while down = %v, want unavailable", err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !c.Healthy() {
		if time.Now().After(deadline) {
			t.Fatal("not reconnected within 5 s of the guest coming back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("call after reconnect: %v", err)
	}
}

func TestCancelReachesTheGuest(t *testing.T) {
	m := startFake(t)
	c, err := Connect(context.Background(), Config{Dial: m.DialGuest, Key: m.GuestKey, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = c.Shell(ctx, protocol.ShellParams{Command: "sleep 37.25"})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > time.Second {
		t.Fatalf("cancelled shell = %v after %s", err, time.Since(t0))
	}
	// The guest killed the command: no sleep 37.25 is left.
	deadline := time.Now().Add(2 * time.Second)
	for {
		if out, _ := exec.Command("pgrep", "-f", "sleep 37.25").Output(); len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the guest's command survived the cancellation")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testKey is the boot key of the tests' guests.
var testKey = bytes.Repeat([]byte{0x5a}, protocol.KeyBytes)

// liar serves a guest that says one thing and sends another. Its hello
// proves testKey (unless the hello handler answers otherwise).
func liar(t *testing.T, methods handler.Map) Dialer {
	if hello := methods[protocol.MethodHello]; hello != nil {
		methods[protocol.MethodHello] = func(ctx context.Context, req *jrpc2.Request) (any, error) {
			res, err := hello(ctx, req)
			var p protocol.HelloParams
			if h, ok := res.(protocol.HelloResult); ok && h.Proof == nil && req.UnmarshalParams(&p) == nil {
				h.Proof = protocol.HelloProof(testKey, p.Challenge)
				res = h
			}
			return res, err
		}
	}
	return func(ctx context.Context) (net.Conn, error) {
		host, guest := net.Pipe()
		srv := jrpc2.NewServer(methods, nil)
		srv.Start(transport.Line(guest, guest))
		// Ending the connection, not srv.Stop, which races a request
		// already read (jrpc2 v1.3.6 panics "send on closed channel").
		t.Cleanup(func() { guest.Close(); srv.Wait() })
		return host, nil
	}
}

func pngOf(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

func TestUntrustedGuest(t *testing.T) {
	ctx := context.Background()
	goodHello := func(context.Context, *jrpc2.Request) (any, error) {
		return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 800, Height: 600, Scale: 1}}, nil
	}
	for name, c := range map[string]struct {
		hello      jrpc2.Handler
		screenshot jrpc2.Handler
		want       string
	}{
		"impossible screen": {
			hello: func(context.Context, *jrpc2.Request) (any, error) {
				return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: -5, Height: 1 << 30, Scale: 1}}, nil
			},
			want: "impossible screen",
		},
		"old protocol": {
			hello: func(context.Context, *jrpc2.Request) (any, error) {
				return protocol.HelloResult{ProtocolVersion: 0, AgentVersion: "0.0.1\x1b[31m", OS: "linux", Screen: protocol.Screen{Width: 8, Height: 8, Scale: 1}}, nil
			},
			want: "rebuild the VM",
		},
		"size lie": {
			hello: goodHello,
			screenshot: func(context.Context, *jrpc2.Request) (any, error) {
				return protocol.ScreenshotResult{Format: "png", Width: 100, Height: 100, Data: pngOf(200, 200)}, nil
			},
			want: "not the 100x100",
		},
		"too many pixels": {
			hello: goodHello,
			screenshot: func(context.Context, *jrpc2.Request) (any, error) {
				var b bytes.Buffer
				png.Encode(&b, image.NewGray(image.Rect(0, 0, 7000, 7000)))
				return protocol.ScreenshotResult{Format: "png", Width: 7000, Height: 7000, Data: b.Bytes()}, nil
			},
			want: "exceeds 40000000 pixels",
		},
		"not an image": {
			hello: goodHello,
			screenshot: func(context.Context, *jrpc2.Request) (any, error) {
				return protocol.ScreenshotResult{Format: "png", Width: 1, Height: 1, Data: []byte("GIF89a nope")}, nil
			},
			want: "does not decode",
		},
		"huge error message": {
			hello: goodHello,
			screenshot: func(context.Context, *jrpc2.Request) (any, error) {
				return nil, &jrpc2.Error{Code: protocol.CodeUnavailable, Message: strings.Repeat("spam\x07", 100000)}
			},
			want: "…",
		},
	} {
		t.Run(name, func(t *testing.T) {
			methods := handler.Map{protocol.MethodHello: c.hello}
			if c.screenshot != nil {
				methods[protocol.MethodScreenshot] = c.screenshot
			}
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			cl, err := Connect(ctx, Config{Dial: liar(t, methods), Key: FixedKey(testKey, false), Log: quiet()})
			if err == nil {
				defer cl.Close()
				_, err = cl.Screenshot(ctx, protocol.ScreenshotParams{MaxWidth: 1280})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want one mentioning %q", err, c.want)
			}
			if len(err.Error()) > 1200 || strings.ContainsAny(err.Error(), "\x07\x1b") {
				t.Fatalf("guest text reached the error unbounded or with control characters: %d bytes", len(err.Error()))
			}
		})
	}
}

// TestInputV2: a host knows from hello whether the guest has the input of
// version 2 (the fake guest, as the real ones, announces it), and gives a
// hold_key the time it holds the key on top of the usual deadline.
func TestInputV2(t *testing.T) {
	m := startFake(t)
	c, err := Connect(context.Background(), Config{Dial: m.DialGuest, Key: m.GuestKey, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Has(protocol.CapInputV2) || c.Has("teleport") {
		t.Fatalf("Has(%s) = %v, Has(teleport) = %v; capabilities %v", protocol.CapInputV2, c.Has(protocol.CapInputV2), c.Has("teleport"), c.Hello().Capabilities)
	}
	if err := c.Call(context.Background(), protocol.MethodHoldKey, protocol.HoldKeyParams{Key: "KP_Enter", Modifiers: []string{"win"}, Seconds: 0.05}, nil); err != nil {
		t.Fatalf("hold_key: %v", err)
	}
	if err := c.Call(context.Background(), protocol.MethodMouseMove, protocol.PointParams{X: 10, Y: 20}, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := c.CursorPosition(context.Background()); err != nil || p != (protocol.CursorPosition{X: 10, Y: 20}) {
		t.Errorf("CursorPosition after a move to (10, 20) = %+v, %v", p, err)
	}
	for _, p := range []protocol.HoldKeyParams{{Seconds: 25}, {Seconds: 30}} {
		if d := deadlineFor(protocol.MethodHoldKey, p); d < time.Duration(p.Seconds)*time.Second+5*time.Second {
			t.Errorf("a hold of %g s has a deadline of %s", p.Seconds, d)
		}
	}
}

// TestCursorPositionOffScreen: a guest cannot hand the host a pointer
// position off the screen it reported.
func TestCursorPositionOffScreen(t *testing.T) {
	for _, at := range []protocol.CursorPosition{{X: 5000, Y: 3}, {X: -1, Y: 3}, {X: 3, Y: 601}} {
		methods := handler.Map{
			protocol.MethodHello: func(context.Context, *jrpc2.Request) (any, error) {
				return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 800, Height: 600, Scale: 1},
					Capabilities: []string{protocol.CapInputV2}}, nil
			},
			protocol.MethodCursorPosition: func(context.Context, *jrpc2.Request) (any, error) { return at, nil },
		}
		c, err := Connect(context.Background(), Config{Dial: liar(t, methods), Key: FixedKey(testKey, false), Log: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := c.CursorPosition(context.Background()); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("a guest's pointer at %+v = %+v, %v; want refused as invalid", at, p, err)
		}
		c.Close()
	}
}
