package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// endpoint is a guest endpoint on a pipe whose answer to hello is
// hello(id) (a raw line without its newline); nil answers nothing.
func endpoint(hello func(id json.RawMessage) []byte) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		host, guest := net.Pipe()
		go func() {
			defer guest.Close()
			in := bufio.NewReader(guest)
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(line, &req)
			if out := hello(req.ID); out != nil {
				guest.Write(append(out, '\n'))
			}
			io := make([]byte, 4096)
			for {
				if _, err := guest.Read(io); err != nil {
					return
				}
			}
		}()
		return host, nil
	}
}

// unprovenHello is a well-formed hello whose proof is not of testKey.
func unprovenHello(id json.RawMessage) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%d,"os":"linux","screen":{"width":800,"height":600,"scale":1},"proof":"AAAA"}}`, id, protocol.Version)
}

// TestImpostorsAreRefused: endpoints that are not the guest agent (a
// hello without the boot key's proof, a protocol-1 guest that knows no
// challenge, hello answers that break the protocol) are refused at once
// with a RefusedError that says why; Connect does not retry them.
func TestImpostorsAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		hello func(id json.RawMessage) []byte
		want  string
	}{
		"no proof": {hello: unprovenHello, want: "did not prove the boot key: the endpoint was replaced"},
		"protocol 1": {hello: func(id json.RawMessage) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"invalid params: unknown field challenge"}}`, id, protocol.CodeInvalidParams)
		}, want: "did not prove the boot key"},
		"no key in the guest": {hello: func(id json.RawMessage) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"this guest agent has no boot key"}}`, id, protocol.CodePermissionDenied)
		}, want: "did not prove the boot key"},
		"10 million [": {hello: func(id json.RawMessage) []byte {
			return append(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"x":`, id), bytes.Repeat([]byte("["), 10_000_000)...)
		}, want: "broke the protocol at hello"},
		"nested 100000 deep": {hello: func(id json.RawMessage) []byte {
			b := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":`, id)
			b = append(b, bytes.Repeat([]byte(`{"a":`), 100000)...)
			return append(append(b, '1'), bytes.Repeat([]byte("}"), 100001)...)
		}, want: "broke the protocol at hello"},
		"over the line cap": {hello: func(id json.RawMessage) []byte {
			return append([]byte(`{"jsonrpc":"2.0","id":1,"result":"`), bytes.Repeat([]byte("A"), protocol.MaxLineBytes+10)...)
		}, want: "exceeds the protocol limit"},
		"not JSON": {hello: func(json.RawMessage) []byte { return []byte("\x00\x01 garbage {{{") }, want: "broke the protocol at hello"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			cl, err := Connect(ctx, Config{Dial: endpoint(c.hello), Key: FixedKey(testKey, false), Log: quiet()})
			if err == nil {
				cl.Close()
				t.Fatal("the impostor was accepted")
			}
			var re *RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || !printable(err) {
				t.Fatalf("Connect = %v; want a printable refusal saying %q", err, c.want)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("the refusal took %s", took)
			}
		})
	}
}

// TestReplacedEndpointIsRefusedOnReconnect: the real guest answers the
// first hello; after its connection is lost, what answers is an impostor
// without the key. The client refuses it, stops reconnecting, closes
// Refused, and every call fails with the reason.
func TestReplacedEndpointIsRefusedOnReconnect(t *testing.T) {
	var dials atomic.Int32
	real := liar(t, handler.Map{protocol.MethodHello: func(context.Context, *jrpc2.Request) (any, error) {
		return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 800, Height: 600, Scale: 1}}, nil
	}})
	var first net.Conn
	dial := func(ctx context.Context) (net.Conn, error) {
		if dials.Add(1) == 1 {
			c, err := real(ctx)
			first = c
			return c, err
		}
		return endpoint(unprovenHello)(ctx)
	}
	cl, err := Connect(context.Background(), Config{Dial: dial, Key: FixedKey(testKey, false), Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	first.Close() // the real agent's connection ends
	select {
	case <-cl.Refused():
	case <-time.After(5 * time.Second):
		t.Fatal("the impostor was not refused")
	}
	err = cl.Call(context.Background(), protocol.MethodHealthCheck, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "did not prove the boot key") || !strings.Contains(cl.Err().Error(), "the endpoint was replaced") {
		t.Fatalf("a call after the refusal = %v (Err %v)", err, cl.Err())
	}
	time.Sleep(300 * time.Millisecond)
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials; after the refusal the client must not dial again", n)
	}
}

// TestEnrollOnlyUntilProven: with enroll, hellos carry the key until one
// proves it; hellos after that never carry it (an impostor that answers a
// reconnect does not learn the key).
func TestEnrollOnlyUntilProven(t *testing.T) {
	var mu sync.Mutex
	var enrolled []bool
	var key []byte
	methods := handler.Map{protocol.MethodHello: func(_ context.Context, req *jrpc2.Request) (any, error) {
		var p protocol.HelloParams
		req.UnmarshalParams(&p)
		mu.Lock()
		defer mu.Unlock()
		enrolled = append(enrolled, p.EnrollKey != nil)
		if p.EnrollKey != nil {
			key = p.EnrollKey
		}
		return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 8, Height: 8, Scale: 1},
			Proof: protocol.HelloProof(key, p.Challenge)}, nil
	}}
	k := bytes.Repeat([]byte{9}, protocol.KeyBytes)
	cl, err := Connect(context.Background(), Config{Dial: liar(t, methods), Key: FixedKey(k, true), Log: quiet(), HeartbeatTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// No heartbeats come: the client reconnects every 200 ms.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(enrolled)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(enrolled) < 3 || !enrolled[0] || enrolled[1] || enrolled[2] || !bytes.Equal(key, k) {
		t.Fatalf("hellos carried the key: %v; want only the first", enrolled)
	}
}

// TestResultBounds: a result nested past maxResultDepth and an
// accessibility tree of more than maxTreeNodes nodes are refused before
// they are decoded for the caller.
func TestResultBounds(t *testing.T) {
	deep := strings.Repeat("[", maxResultDepth+1) + strings.Repeat("]", maxResultDepth+1)
	var nodes strings.Builder
	nodes.WriteString(`{"nodes":[`)
	for i := range maxTreeNodes + 1 {
		if i > 0 {
			nodes.WriteByte(',')
		}
		nodes.WriteString(`{"id":"n","role":"button","name":"x","frame":{"x":0,"y":0,"w":1,"h":1}}`)
	}
	nodes.WriteString(`]}`)
	methods := handler.Map{
		protocol.MethodHello: func(context.Context, *jrpc2.Request) (any, error) {
			return protocol.HelloResult{ProtocolVersion: protocol.Version, OS: "linux", Screen: protocol.Screen{Width: 8, Height: 8, Scale: 1}}, nil
		},
		protocol.MethodClipboardRead: func(context.Context, *jrpc2.Request) (any, error) {
			return json.RawMessage(`{"text":` + deep + `}`), nil
		},
		protocol.MethodAccessibilityTree: func(context.Context, *jrpc2.Request) (any, error) {
			return json.RawMessage(nodes.String()), nil
		},
	}
	cl, err := Connect(context.Background(), Config{Dial: liar(t, methods), Key: FixedKey(testKey, false), Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var raw json.RawMessage
	if err := cl.Call(context.Background(), protocol.MethodClipboardRead, nil, &raw); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "nests deeper") {
		t.Fatalf("a deep result = %v", err)
	}
	if err := cl.Call(context.Background(), protocol.MethodAccessibilityTree, nil, &raw); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("a huge tree = %v", err)
	}
	if jsonDepth([]byte(`{"a":"[[[[[[","b":[{"c":"\"]]]"}]}`), 10) != 3 {
		t.Fatal("jsonDepth counted brackets inside strings")
	}
}

// TestDeepLineDoesNotCrashTheLift: a message of 10 million '[' (which
// overflowed the stack of the recursive scanner) is left unlifted, in
// bounded time.
func TestDeepLineDoesNotCrashTheLift(t *testing.T) {
	msg := append([]byte(`{"jsonrpc":"2.0","id":1,"x":`), bytes.Repeat([]byte("["), 10_000_000)...)
	start := time.Now()
	if _, _, _, ok := liftImage(msg, liftMin); ok {
		t.Fatal("lifted an image from brackets")
	}
	balanced := []byte(`{"jsonrpc":"2.0","id":1,"x":` + strings.Repeat("[", maxScanDepth) + strings.Repeat("]", maxScanDepth) +
		`,"result":{"format":"png","data":"` + strings.Repeat("A", liftMin) + `"}}`)
	if _, _, _, ok := liftImage(balanced, liftMin); !ok {
		t.Fatal("a message within the scan depth was not lifted")
	}
	deeper := []byte(`{"jsonrpc":"2.0","id":1,"x":` + strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1) +
		`,"result":{"format":"png","data":"` + strings.Repeat("A", liftMin) + `"}}`)
	if _, _, _, ok := liftImage(deeper, liftMin); ok {
		t.Fatal("a message past the scan depth was lifted")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %s", took)
	}
}
