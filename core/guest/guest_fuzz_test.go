package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// A hostile guest: the host's side of the guest protocol decodes whatever
// a guest sends (a compromised or broken guest agent is untrusted input).
// Whatever arrives, a call ends within its deadline with a result that
// passed the checks or a bounded, printable error, and the client stays
// usable: it reconnects, and the next well-behaved answer works.

// rogue is a guest agent on a unix socket that says a correct hello and
// then answers calls with answer(n, id): a raw line with the call's id in
// it (nil: a correct answer). n counts the calls other than hello from 1,
// across connections.
type rogue struct {
	ln     net.Listener
	answer func(n int, id json.RawMessage) []byte
	calls  atomic.Int32
	wg     sync.WaitGroup
}

func newRogue(t testing.TB, answer func(n int, id json.RawMessage) []byte) *rogue {
	t.Helper()
	dir, err := os.MkdirTemp("", "hg") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	g := &rogue{ln: ln, answer: answer}
	g.wg.Add(1)
	go g.serve()
	t.Cleanup(func() { ln.Close(); g.wg.Wait(); os.RemoveAll(dir) })
	return g
}

func (g *rogue) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", g.ln.Addr().String())
}

func (g *rogue) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer c.Close()
			g.conn(c)
		}()
	}
}

// goodShot is a correct screenshot result.
var goodShot = func() []byte {
	b, _ := json.Marshal(protocol.ScreenshotResult{Format: "png", Width: 4, Height: 3, Data: pngOf(4, 3)})
	return b
}()

func (g *rogue) conn(c net.Conn) {
	in := bufio.NewReaderSize(c, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage      `json:"id"`
			Method string               `json:"method"`
			Params protocol.HelloParams `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // a notification ($/cancelRequest)
		}
		var out []byte
		switch req.Method {
		case protocol.MethodHello:
			proof, _ := json.Marshal(protocol.HelloProof(testKey, req.Params.Challenge))
			out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%d,"agentVersion":"rogue","os":"linux","screen":{"width":800,"height":600,"scale":1},"proof":%s}}`, req.ID, protocol.Version, proof)
		default:
			if out = g.answer(int(g.calls.Add(1)), req.ID); out == nil {
				out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, goodShot)
			}
		}
		if _, err := c.Write(append(out, '\n')); err != nil {
			return
		}
	}
}

// printable reports whether a guest-influenced error stays short and free
// of control characters (it is logged and shown to users).
func printable(err error) bool {
	msg := err.Error()
	return len(msg) <= 2*maxMessage && strings.IndexFunc(msg, func(r rune) bool {
		return unicode.IsControl(r) && r != '\n' && r != '\t'
	}) < 0
}

func connectRogue(t testing.TB, g *rogue) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Connect(ctx, Config{Dial: g.dial, Key: FixedKey(testKey, false), Log: quiet(), HeartbeatTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recovers checks that, after a hostile answer, the client gets a good
// screenshot from the guest (reconnecting if it had to drop the line).
func recovers(t testing.TB, c *Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		shot, err := c.Screenshot(ctx, protocol.ScreenshotParams{MaxWidth: 1280})
		cancel()
		if err == nil && shot.Width == 4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not recover from the hostile answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHostileGuestAnswers: a 100 MB line, a line that is not JSON, an
// answer to another call, and a result of the wrong shape each fail the
// call with a clear error, quickly, and the client recovers.
func TestHostileGuestAnswers(t *testing.T) {
	huge := func(id json.RawMessage) []byte {
		prefix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"format":"png","width":1,"height":1,"data":"`, id)
		b := make([]byte, 0, 100<<20)
		b = append(b, prefix...)
		b = append(b, bytes.Repeat([]byte("A"), 100<<20-len(prefix)-3)...)
		return append(b, `"}}`...)
	}
	for name, c := range map[string]struct {
		answer func(id json.RawMessage) []byte
		within time.Duration
		want   []string
		class  error
	}{
		"100 MB line": {answer: huge, within: 10 * time.Second, want: []string{"connection lost", "exceeds the protocol limit"}, class: errdefs.ErrUnavailable},
		"not JSON": {answer: func(json.RawMessage) []byte { return []byte("\x00\x01 garbage {{{") },
			within: 2 * time.Second, want: []string{"connection lost"}, class: errdefs.ErrUnavailable},
		"answer to another call": {answer: func(json.RawMessage) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":424242,"result":%s}`, goodShot)
		},
			within: 3 * time.Second, want: []string{"screenshot", "deadline exceeded"}, class: context.DeadlineExceeded},
		"result of the wrong shape": {answer: func(id json.RawMessage) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"format":7,"width":"wide","data":[1,2]}}`, id)
		}, within: 2 * time.Second, want: []string{"malformed result"}, class: errdefs.ErrInvalid},
		"base64 that is no image": {answer: func(id json.RawMessage) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"format":"png","width":1,"height":1,"data":%q}}`, id, base64.StdEncoding.EncodeToString([]byte("\x1b[31mnot a png")))
		}, within: 2 * time.Second, want: []string{"does not decode"}, class: errdefs.ErrInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			g := newRogue(t, func(n int, id json.RawMessage) []byte {
				if n == 1 {
					return c.answer(id)
				}
				return nil
			})
			cl := connectRogue(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := cl.Screenshot(ctx, protocol.ScreenshotParams{MaxWidth: 1280})
			took := time.Since(start)
			t.Logf("%s: %v after %s", name, err, took.Round(time.Millisecond))
			if err == nil || took > c.within {
				t.Fatalf("call = %v after %s; want an error within %s", err, took, c.within)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not say %q", err, w)
				}
			}
			if !errors.Is(err, c.class) || !printable(err) {
				t.Fatalf("error %q: want class %v, short and printable", err, c.class)
			}
			recovers(t, cl)
		})
	}
}

// FuzzGuestAnswer: the guest answers a screenshot call with an arbitrary
// line ("$ID" stands for the call's id). The call ends by its deadline; a result it returns passed the checks; an error is bounded
// and printable; the client recovers.
func FuzzGuestAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":$ID,"result":` + string(goodShot) + `}`,
		`{"jsonrpc":"2.0","id":$ID,"result":null}`,
		`{"jsonrpc":"2.0","id":$ID}`,
		`{"jsonrpc":"2.0","id":$ID,"result":{"format":"png","width":-1,"height":0,"data":""}}`,
		`{"jsonrpc":"2.0","id":$ID,"result":{"format":"png","width":100000,"height":100000,"data":"iVBORw0KGgo="}}`,
		`{"jsonrpc":"2.0","id":$ID,"result":{"format":"gif","width":1,"height":1,"data":"R0lGODlhAQABAAAAACw="}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":-32001,"message":"\u001b[2J\u0007 ` + strings.Repeat("spam ", 500) + `"}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":{"code":1e99,"message":{"nested":true}}}`,
		`{"jsonrpc":"2.0","id":$ID,"error":null,"result":null}`,
		`{"jsonrpc":"1.0","id":$ID,"result":{}}`,
		`{"jsonrpc":"2.0","id":"$ID","result":{}}`,
		`{"jsonrpc":"2.0","id":[$ID],"result":{}}`,
		`[{"jsonrpc":"2.0","id":$ID,"result":{}},{"jsonrpc":"2.0","id":$ID,"result":{}}]`,
		`[]`, `{}`, `null`, `"string"`, `{"jsonrpc":"2.0","method":"$/heartbeat","params":{"uptime":-1}}`,
		`{"jsonrpc":"2.0","id":99,"method":"hello","params":{}}`,
		`{"jsonrpc":"2.0","method":"$/shellOutput","params":{"data":"` + strings.Repeat("x", 1000) + `"}}`,
		"\xff\xfe\x00", `{"jsonrpc":"2.0","id":$ID,"result":` + strings.Repeat("[", 100000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		g := newRogue(t, func(n int, id json.RawMessage) []byte {
			if n > 1 {
				return nil
			}
			return []byte(strings.ReplaceAll(strings.ReplaceAll(answer, "\n", " "), "$ID", string(id)))
		})
		cl := connectRogue(t, g)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		shot, err := cl.Screenshot(ctx, protocol.ScreenshotParams{MaxWidth: 1280, MaxHeight: 800})
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("call took %s past its 100 ms deadline", took)
		}
		if err == nil && (shot.Width <= 0 || shot.Height <= 0 || shot.Width > 1280 || shot.Height > 800 || len(shot.Data) == 0) {
			t.Fatalf("accepted an impossible screenshot %dx%d of %d bytes", shot.Width, shot.Height, len(shot.Data))
		}
		if err != nil && !printable(err) {
			t.Fatalf("guest text reached the error unbounded or with control characters: %q", err)
		}
		recovers(t, cl)
	})
}

// streamGuest is a guest endpoint on pipes that sends what a fuzzed stream
// says: parts[0] answers the first connection's hello, parts[1] the first
// call after it, and then the connection ends; parts[2] answers the hello
// of the reconnection. In each part, $ID is the id of the request answered
// and $PROOF the correct proof of testKey for the hello's challenge (so
// that the fuzzer can get past hello, as a compromised agent that holds
// the key would).
type streamGuest struct {
	parts []string
	dials atomic.Int32
	wg    sync.WaitGroup
	// mu guards proven: the host ends of the connections whose hello
	// answer carried the correct proof.
	mu     sync.Mutex
	proven map[net.Conn]bool
}

// accepted fails the test when the client's live connection (if any) is
// one whose hello answer did not carry the key's proof.
func (g *streamGuest) accepted(t *testing.T, cl *Client) {
	t.Helper()
	cl.mu.Lock()
	conn := cl.conn
	cl.mu.Unlock()
	if cli, _ := cl.current(); cli == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.proven[conn] {
		t.Fatalf("accepted a connection whose hello did not carry the key's proof (stream %q)", g.parts)
	}
}

func (g *streamGuest) dial(ctx context.Context) (net.Conn, error) {
	n := int(g.dials.Add(1))
	host, guest := net.Pipe()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer guest.Close()
		guest.SetDeadline(time.Now().Add(3 * time.Second))
		in := bufio.NewReaderSize(guest, 64<<10)
		answer := func(part string) bool {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return false
			}
			var req struct {
				ID     json.RawMessage      `json:"id"`
				Params protocol.HelloParams `json:"params"`
			}
			json.Unmarshal(line, &req)
			out := strings.ReplaceAll(part, "$ID", string(req.ID))
			if strings.Contains(out, "$PROOF") {
				proof, _ := json.Marshal(protocol.HelloProof(testKey, req.Params.Challenge))
				out = strings.ReplaceAll(out, "$PROOF", string(proof))
				g.mu.Lock()
				if g.proven == nil {
					g.proven = map[net.Conn]bool{}
				}
				g.proven[host] = true
				g.mu.Unlock()
			}
			_, err = guest.Write([]byte(out))
			return err == nil
		}
		switch n {
		case 1:
			if answer(g.parts[0]) {
				answer(g.parts[1])
			}
		case 2:
			if answer(g.parts[2]) {
				io.Copy(io.Discard, in)
			}
		}
	}()
	return host, nil
}

const fuzzHello = `{"jsonrpc":"2.0","id":$ID,"result":{"protocolVersion":2,"agentVersion":"fuzz","os":"linux","screen":{"width":800,"height":600,"scale":1},"proof":$PROOF}}` + "\n"

// FuzzGuestStream feeds arbitrary guest byte streams to the real client
// through the whole host-side path: the hello and its proof, a call, the
// connection's loss and the reconnection's hello. Whatever the guest
// sends, the client never panics, never accepts a hello that did not
// carry the key's proof (on the first connection or on the reconnect),
// every step ends within its deadline, an accepted screenshot passed the
// checks, errors are bounded and printable, and Close returns promptly.
func FuzzGuestStream(f *testing.F) {
	shot := `{"jsonrpc":"2.0","id":$ID,"result":` + string(goodShot) + "}\n"
	for _, seed := range [][3]string{
		{fuzzHello, shot, fuzzHello},
		{strings.ReplaceAll(fuzzHello, "$PROOF", `"AAAA"`), shot, fuzzHello},
		{fuzzHello, shot, strings.ReplaceAll(fuzzHello, "$PROOF", `null`)},
		{fuzzHello, `{"jsonrpc":"2.0","id":$ID,"x":` + strings.Repeat("[", 100000) + "\n", fuzzHello},
		{`{"jsonrpc":"2.0","method":"$/heartbeat","params":{}}` + "\n" + fuzzHello, shot, "\xff\xfe\n"},
		{fuzzHello, `{"jsonrpc":"2.0","id":$ID,"result":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20001) + "\n", fuzzHello},
		{`{"jsonrpc":"2.0","id":$ID,"error":{"code":-32004,"message":"no key"}}` + "\n", shot, fuzzHello},
		{`{"jsonrpc":"2.0","id":$ID,"error":{"code":-32602,"message":"unknown field challenge"}}` + "\n", shot, fuzzHello},
		{`[` + strings.TrimSuffix(fuzzHello, "\n") + `,` + strings.TrimSuffix(fuzzHello, "\n") + "]\n", shot, fuzzHello},
		{fuzzHello, `{"jsonrpc":"2.0","id":424242,"result":{}}` + "\n", fuzzHello},
		{fuzzHello, `{"jsonrpc":"2.0","method":"$/shellOutput","params":{"data":"x"}}` + "\n" + shot, `{"jsonrpc":"2.0","id":$ID,"result":{"protocolVersion":2,"os":"linux","screen":{"width":800,"height":600,"scale":1},"proof":$PROOF,"capabilities":[` + strings.Repeat(`"x",`, 40) + `"x"]}}` + "\n"},
		{"", "", ""},
	} {
		f.Add(seed[0] + "\x00" + seed[1] + "\x00" + seed[2])
	}
	f.Fuzz(func(t *testing.T, stream string) {
		parts := append(strings.SplitN(stream, "\x00", 3), "", "")[:3]
		g := &streamGuest{parts: parts}
		defer g.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		cl, err := Connect(ctx, Config{Dial: g.dial, Key: FixedKey(testKey, false), Log: quiet(), HeartbeatTimeout: time.Minute})
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Connect took %s past its 100 ms deadline", took)
		}
		if err != nil {
			if !printable(err) {
				t.Fatalf("Connect's error is unbounded or has control characters: %q", err)
			}
			return
		}
		g.accepted(t, cl)
		cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start = time.Now()
		shot, err := cl.Screenshot(cctx, protocol.ScreenshotParams{MaxWidth: 1280, MaxHeight: 800})
		ccancel()
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the call took %s past its 100 ms deadline", took)
		}
		if err == nil && (shot.Width <= 0 || shot.Height <= 0 || shot.Width > 1280 || shot.Height > 800 || len(shot.Data) == 0) {
			t.Fatalf("accepted an impossible screenshot %dx%d of %d bytes", shot.Width, shot.Height, len(shot.Data))
		}
		if err != nil && !printable(err) {
			t.Fatalf("the call's error is unbounded or has control characters: %q", err)
		}
		// The guest ends the connection; the client reconnects to parts[2].
		deadline := time.Now().Add(100 * time.Millisecond)
		for time.Now().Before(deadline) && g.dials.Load() < 2 {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		g.accepted(t, cl)
		start = time.Now()
		cl.Close()
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Close took %s", took)
		}
	})
}

// TestStreamGuestReconnects checks FuzzGuestStream's guest: a proven
// hello, a screenshot and a proven reconnect end connected on the second
// connection; a reconnect hello without the proof ends refused.
func TestStreamGuestReconnects(t *testing.T) {
	shot := `{"jsonrpc":"2.0","id":$ID,"result":` + string(goodShot) + "}\n"
	for name, c := range map[string]struct {
		again   string
		refused bool
	}{
		"proven":   {again: fuzzHello},
		"unproven": {again: strings.ReplaceAll(fuzzHello, "$PROOF", `"AAAA"`), refused: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := &streamGuest{parts: []string{fuzzHello, shot, c.again}}
			defer g.wg.Wait()
			cl, err := Connect(context.Background(), Config{Dial: g.dial, Key: FixedKey(testKey, false), Log: quiet(), HeartbeatTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.Screenshot(context.Background(), protocol.ScreenshotParams{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(2 * time.Second)
			for {
				cli, _ := cl.current()
				refused := cl.Err() != nil
				if g.dials.Load() == 2 && (cli != nil && !c.refused || refused && c.refused) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("dials %d, connected %v, refusal %v", g.dials.Load(), cli != nil, cl.Err())
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
