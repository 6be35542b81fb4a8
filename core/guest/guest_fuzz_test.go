package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
