// Package guest is the host's client of the guest agent: typed calls over
// the guest protocol, a version check on hello, heartbeat supervision,
// reconnection with backoff, per-call deadlines and cancellation forwarded
// as $/cancelRequest. Everything the guest sends is untrusted: sizes,
// strings and images are checked before they are used.
package guest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/creachadair/jrpc2"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
	"github.com/hivecrew/hivecrew/guestagent/transport"
)

// Dialer connects to the guest agent (a unix socket, a vsock device).
type Dialer func(ctx context.Context) (net.Conn, error)

// Config configures a Client. Dial, Log and Key are required.
type Config struct {
	Dial Dialer
	Log  *slog.Logger
	// Key returns the machine's boot key (vm.Machine.GuestKey), asked
	// again at every hello (a restarted machine has a new one): every
	// hello challenges the guest to prove it, and a guest that does not
	// is refused for good (RefusedError). With enroll, hellos hand the key
	// to the guest agent until one proves it, and never after (macOS
	// guests, which have no other channel for it).
	Key func() (key []byte, enroll bool)
	// HeartbeatTimeout declares the guest unhealthy after this long without a
	// heartbeat; default protocol.MissedHeartbeats heartbeat intervals.
	HeartbeatTimeout time.Duration
	// OnNotify receives the guest's notifications other than heartbeats
	// ($/shellOutput); it must not block.
	OnNotify func(method string, params json.RawMessage)
}

// Client talks to one guest agent. It is safe for concurrent use.
type Client struct {
	cfg Config

	// mu guards cli, ch, hello and lost.
	mu  sync.Mutex
	cli *jrpc2.Client
	// ch is cli's channel, which holds the images it lifted from responses.
	ch *liftChannel
	// conn is cli's connection as Dial returned it.
	conn  net.Conn
	hello protocol.HelloResult
	// lost is closed when the current connection is found dead.
	lost chan struct{}
	// enrolled is the key a hello proved last (enrollment is done).
	enrolled []byte
	// refusal is why the guest was refused; refused is closed then.
	refusal error
	refused chan struct{}

	lastBeat atomic.Int64 // unix nanoseconds of the last heartbeat or answer
	// ctx ends when Close is called: a reconnection in progress (a dial,
	// a hello) ends with it, so that Close returns promptly.
	ctx     context.Context
	cancel  context.CancelFunc
	closed  chan struct{}
	done    chan struct{} // closed when the monitor has exited
	closeMu sync.Once
}

// Connect dials the guest, says hello and checks its protocol version. It
// retries the dial with backoff until ctx ends (a booting guest is not
// listening yet).
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Dial == nil || cfg.Log == nil || cfg.Key == nil {
		return nil, errors.New("guest client: Dial, Log and Key are required")
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = protocol.MissedHeartbeats * protocol.HeartbeatIntervalSeconds * time.Second
	}
	c := &Client{cfg: cfg, closed: make(chan struct{}), done: make(chan struct{}), refused: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.reconnect(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	go c.monitor()
	return c, nil
}

// Close ends the connection and the supervision.
func (c *Client) Close() error {
	c.closeMu.Do(func() {
		close(c.closed)
		c.cancel()
		c.mu.Lock()
		if c.cli != nil {
			c.cli.Close()
		}
		c.mu.Unlock()
		<-c.done
	})
	return nil
}

// Hello returns the guest's answer to the last hello.
func (c *Client) Hello() protocol.HelloResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// Has reports whether the guest announced capability in its last hello
// (protocol.CapInputV2: the methods and params of input version 2).
func (c *Client) Has(capability string) bool {
	return slices.Contains(c.Hello().Capabilities, capability)
}

// current returns the live connection and its channel, or nil while there
// is none (the last one died, perhaps before the monitor has noticed).
func (c *Client) current() (*jrpc2.Client, *liftChannel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cli == nil {
		return nil, nil
	}
	select {
	case <-c.lost:
		return nil, nil
	default:
		return c.cli, c.ch
	}
}

// Healthy reports whether the guest is connected and its heartbeats arrive.
func (c *Client) Healthy() bool {
	cli, _ := c.current()
	return cli != nil && time.Since(time.Unix(0, c.lastBeat.Load())) < c.cfg.HeartbeatTimeout
}

// backoff returns the delay before redial attempt n (from 0): 50 ms doubling to 1 s.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond << min(n, 5)
	return min(d, time.Second)
}

// FixedKey is a Config.Key that is always key (a guest agent the caller
// started itself, outside any machine).
func FixedKey(key []byte, enroll bool) func() ([]byte, bool) {
	return func() ([]byte, bool) { return key, enroll }
}

// RefusedError is why the host refused the guest agent's endpoint: it did
// not prove the boot key, or broke the protocol at hello. The client does
// not talk to that guest again; Refused is closed.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// Refused returns a channel closed once the guest has been refused; Err
// says why.
func (c *Client) Refused() <-chan struct{} { return c.refused }

// Err returns why the guest was refused, or nil.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusal
}

// refuse records the refusal (once) and closes Refused.
func (c *Client) refuse(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusal == nil {
		c.refusal = err
		close(c.refused)
	}
}

// reconnect dials and says hello, retrying until ctx ends.
func (c *Client) reconnect(ctx context.Context) error {
	var last error
	for attempt := 0; ; attempt++ {
		if err := c.connectOnce(ctx); err == nil {
			return nil
		} else {
			last = err
			var pe *protocol.Error
			var re *RefusedError
			if errors.As(err, &re) {
				c.refuse(err)
				return err
			}
			if errors.As(err, &pe) && pe.Code == protocol.CodeVersionMismatch || errors.Is(err, errdefs.ErrUnsupported) {
				return err // retrying cannot help
			}
		}
		select {
		case <-ctx.Done():
			return errdefs.Unavailablef("guest agent not reachable: %v", last)
		case <-c.closed:
			return errdefs.Unavailablef("guest client closed")
		case <-time.After(backoff(attempt)):
		}
	}
}

func (c *Client) connectOnce(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := c.cfg.Dial(dctx)
	if err != nil {
		return err
	}
	lost := make(chan struct{})
	var lostOnce sync.Once
	markLost := func() { lostOnce.Do(func() { close(lost) }) }
	gc := &guestConn{Conn: conn}
	var stopped atomic.Pointer[error] // why the connection stopped reading
	ch := &liftChannel{Channel: transport.Line(gc, gc)}
	cli := jrpc2.NewClient(ch, &jrpc2.ClientOptions{
		OnNotify: c.onNotify,
		OnCancel: func(cli *jrpc2.Client, rsp *jrpc2.Response) {
			// Tell the guest to stop the work too (a shell command, a wait).
			nctx, ncancel := context.WithTimeout(context.Background(), time.Second)
			defer ncancel()
			cli.Notify(nctx, protocol.NotifyCancelRequest, protocol.CancelParams{ID: json.RawMessage(rsp.ID())})
		},
		OnStop: func(_ *jrpc2.Client, err error) {
			if err != nil {
				stopped.Store(&err)
			}
			markLost()
		},
	})
	key, enroll := c.cfg.Key()
	if len(key) != protocol.KeyBytes {
		cli.Close()
		return errdefs.Unavailablef("the machine has no boot key (not running)")
	}
	challenge := make([]byte, protocol.ChallengeBytes)
	rand.Read(challenge)
	params := protocol.HelloParams{ProtocolVersion: protocol.Version, Challenge: challenge}
	c.mu.Lock()
	if enroll && !bytes.Equal(c.enrolled, key) {
		params.EnrollKey = key
	}
	c.mu.Unlock()
	var hello protocol.HelloResult
	rsp, err := cli.Call(dctx, protocol.MethodHello, params)
	if err == nil {
		ch.settled(rsp.ID())
		err = rsp.UnmarshalResult(&hello)
	}
	if err != nil {
		if cli.IsStopped() {
			// The reader stopped the client: its reason reaches OnStop
			// just after the pending call fails.
			select {
			case <-lost:
			case <-time.After(time.Second):
			}
		}
		why := stopped.Load() // before Close, which stops it too
		cli.Close()
		var je *jrpc2.Error
		switch {
		case errors.As(err, &je) && je.Code == protocol.CodePermissionDenied:
			return &RefusedError{Reason: fmt.Sprintf("%s (the guest said: %s)", errNotProven, clean(je.Message))}
		case errors.As(err, &je) && je.Code == protocol.CodeVersionMismatch:
			return fmt.Errorf("hello: %w", classify(err))
		case errors.As(err, &je) && je.Code == protocol.CodeInvalidParams && !strings.Contains(je.Message, "challenge"):
			return fmt.Errorf("hello: %w", classify(err))
		case errors.As(err, &je) && je.Code == protocol.CodeInvalidParams:
			// A guest of protocol 1 knows no challenge: it proves nothing.
			return &RefusedError{Reason: fmt.Sprintf("%s, or its guest agent is older than protocol %d (rebuild the template with this Hivecrew's agent); the guest said: %s",
				errNotProven, protocol.MinVersion, clean(je.Message))}
		}
		if why != nil && gc.read.Load() > 0 && brokeProtocol(*why) {
			// Something answered, but not with JSON-RPC (a line over the
			// cap, a message that does not decode): the guest agent never
			// does this, a replaced endpoint does.
			return &RefusedError{Reason: fmt.Sprintf("the guest agent's endpoint broke the protocol at hello (%s): the endpoint was replaced", clean((*why).Error()))}
		}
		return fmt.Errorf("hello: %w", classify(err))
	}
	if !hmac.Equal(hello.Proof, protocol.HelloProof(key, challenge)) {
		cli.Close()
		return &RefusedError{Reason: errNotProven}
	}
	if hello.ProtocolVersion < protocol.MinVersion {
		cli.Close()
		return errdefs.Unsupportedf("guest agent %s speaks protocol %d; this Hivecrew needs at least %d: rebuild the VM from an updated template",
			clean(hello.AgentVersion), hello.ProtocolVersion, protocol.MinVersion)
	}
	if err := checkHello(hello); err != nil {
		cli.Close()
		return err
	}
	c.mu.Lock()
	select {
	case <-c.closed:
		// Close ran while this connection was being made: it must not
		// outlive the client.
		c.mu.Unlock()
		cli.Close()
		return errdefs.Unavailablef("guest client closed")
	default:
	}
	old := c.cli
	c.cli, c.ch, c.hello, c.lost, c.enrolled, c.conn = cli, ch, hello, lost, key, conn
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
	c.lastBeat.Store(time.Now().UnixNano())
	return nil
}

// errNotProven is why a guest that cannot prove the boot key is refused.
const errNotProven = "the guest agent did not prove the boot key: the endpoint was replaced"

// checkHello refuses a guest description that cannot be right.
func checkHello(h protocol.HelloResult) error {
	for _, s := range []string{h.AgentVersion, h.OS, h.OSVersion, h.SharedPath} {
		if len(s) > maxHelloString {
			return errdefs.Invalidf("guest reported a hello string of %d bytes (at most %d)", len(s), maxHelloString)
		}
	}
	if len(h.Capabilities) > maxCapabilities {
		return errdefs.Invalidf("guest reported %d capabilities (at most %d)", len(h.Capabilities), maxCapabilities)
	}
	s := h.Screen
	if s.Width <= 0 || s.Height <= 0 || s.Width > 16384 || s.Height > 16384 || s.Scale <= 0 || s.Scale > 8 {
		return errdefs.Invalidf("guest reported an impossible screen %dx%d at scale %g", s.Width, s.Height, s.Scale)
	}
	if h.OS != "linux" && h.OS != "macos" {
		return errdefs.Invalidf("guest reported unknown OS %q", clean(h.OS))
	}
	return nil
}

func (c *Client) onNotify(req *jrpc2.Request) {
	c.lastBeat.Store(time.Now().UnixNano())
	if req.Method() == protocol.NotifyHeartbeat || c.cfg.OnNotify == nil {
		return
	}
	var raw json.RawMessage
	if req.UnmarshalParams(&raw) == nil {
		c.cfg.OnNotify(req.Method(), raw)
	}
}

// monitor declares the connection dead when heartbeats stop, and reconnects
// in the background after a loss.
func (c *Client) monitor() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.HeartbeatTimeout / 4)
	defer t.Stop()
	for {
		c.mu.Lock()
		lost := c.lost
		c.mu.Unlock()
		select {
		case <-c.closed:
			return
		case <-t.C:
			if time.Since(time.Unix(0, c.lastBeat.Load())) < c.cfg.HeartbeatTimeout {
				continue
			}
			c.cfg.Log.Warn("guest agent missed its heartbeats; reconnecting", "timeout", c.cfg.HeartbeatTimeout)
			c.drop()
		case <-lost:
			c.cfg.Log.Info("guest agent connection lost; reconnecting")
			c.drop()
		}
		// reconnect retries until it succeeds, the guest is refused or
		// the client is closed.
		if err := c.reconnect(c.ctx); err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				c.cfg.Log.Error("guest agent refused; not reconnecting", "err", err)
				<-c.closed
				return
			}
			c.cfg.Log.Info("guest agent reconnect stopped", "err", err)
		}
	}
}

// drop closes the current connection so that calls fail fast until the
// reconnect succeeds.
func (c *Client) drop() {
	c.mu.Lock()
	cli := c.cli
	c.cli, c.ch = nil, nil
	c.lost = make(chan struct{}) // a fresh, open channel for the next select
	c.mu.Unlock()
	if cli != nil {
		cli.Close()
	}
}

// Lost returns a channel closed when the current connection is found dead.
func (c *Client) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Call sends a request and decodes its result into result (which may be
// nil). Without a deadline in ctx the method's default deadline applies. A
// connection that is down (being reconnected) fails the call with an error
// of class errdefs.ErrUnavailable.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadlineFor(method, params))
		defer cancel()
	}
	cli, ch := c.current()
	if cli == nil {
		if err := c.Err(); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return errdefs.Unavailablef("%s: guest agent not connected (reconnecting)", method)
	}
	rsp, err := cli.Call(ctx, method, params)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", method, ctx.Err())
		}
		// jrpc2 fails pending calls with context.Canceled when the
		// connection dies, or with why it stopped reading (a line over the
		// cap, a message that is not JSON-RPC); the caller's own context
		// is still live here.
		if errors.Is(err, jrpc2.ErrConnClosed) || errors.Is(err, context.Canceled) || isConnError(err) || cli.IsStopped() {
			reason := err.Error()
			var je *jrpc2.Error
			if errors.As(err, &je) {
				reason = je.Message
			}
			return errdefs.Unavailablef("%s: guest agent connection lost: %s", method, clean(reason))
		}
		return fmt.Errorf("%s: %w", method, classify(err))
	}
	c.lastBeat.Store(time.Now().UnixNano())
	ch.settled(rsp.ID())
	img, lifted := ch.take(rsp.ID())
	if result == nil {
		return nil
	}
	var raw json.RawMessage
	if err := rsp.UnmarshalResult(&raw); err != nil {
		return errdefs.Invalidf("%s: malformed result from the guest: %v", method, err)
	}
	if err := checkResult(method, raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return errdefs.Invalidf("%s: malformed result from the guest: %v", method, err)
	}
	if lifted {
		shot, ok := result.(*protocol.ScreenshotResult)
		if !ok {
			return errdefs.Invalidf("%s: the guest answered with a screenshot", method)
		}
		shot.Data = img
	}
	return nil
}

// brokeProtocol reports whether the connection stopped because of what the
// guest sent (a line over the cap, a message that does not decode), rather
// than because it ended.
func brokeProtocol(err error) bool {
	return !isConnError(err) && !errors.Is(err, jrpc2.ErrConnClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed)
}

func isConnError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")
}

// deadlineFor gives a method call its default deadline.
func deadlineFor(method string, params any) time.Duration {
	switch method {
	case protocol.MethodRunShell:
		if p, ok := params.(protocol.ShellParams); ok && p.TimeoutSeconds > 0 {
			return time.Duration(p.TimeoutSeconds*float64(time.Second)) + 10*time.Second
		}
		return 5*time.Minute + 10*time.Second
	case protocol.MethodWait:
		if p, ok := params.(protocol.WaitParams); ok {
			return time.Duration(p.Seconds*float64(time.Second)) + 5*time.Second
		}
	case protocol.MethodHoldKey:
		if p, ok := params.(protocol.HoldKeyParams); ok && p.Seconds > 0 && p.Seconds <= protocol.MaxHoldSeconds {
			return time.Duration(p.Seconds*float64(time.Second)) + 10*time.Second
		}
		return protocol.MaxHoldSeconds*time.Second + 10*time.Second
	case protocol.MethodAccessibilityTree, protocol.MethodOpenApp, protocol.MethodOpenFile, protocol.MethodOpenURL:
		return 30 * time.Second
	case protocol.MethodReadDocument:
		// The guest's tools run a minute at most each (a LibreOffice
		// conversion, then pdfinfo and pdftotext, 30 s each).
		return 150 * time.Second
	}
	return 20 * time.Second
}

// Error is an error the guest answered with. Its message is the guest's,
// cleaned and shortened; errors.Is matches it to the errdefs classes.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return "guest: " + e.Message }

// Is maps protocol codes to error classes.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case protocol.CodeNotFound:
		return target == errdefs.ErrNotFound
	case protocol.CodeConflict:
		return target == errdefs.ErrConflict
	case protocol.CodeInvalidParams, protocol.CodePermissionDenied:
		return target == errdefs.ErrInvalid
	case protocol.CodeUnavailable:
		return target == errdefs.ErrUnavailable
	case protocol.CodeUnsupported, protocol.CodeVersionMismatch, protocol.CodeMethodNotFound:
		return target == errdefs.ErrUnsupported
	case protocol.CodeTooLarge:
		return target == errdefs.ErrTooLarge
	case protocol.CodeCancelled:
		return target == context.Canceled
	case protocol.CodeTimeout:
		return target == context.DeadlineExceeded
	}
	return false
}

// classify turns a jrpc2 error into an *Error with a clean message.
func classify(err error) error {
	var je *jrpc2.Error
	if errors.As(err, &je) {
		return &Error{Code: int(je.Code), Message: clean(je.Message)}
	}
	return err
}

// maxMessage bounds a guest-supplied message.
const maxMessage = 1000

// clean makes a guest-supplied string safe to log and show: no control
// characters, at most maxMessage bytes.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8RuneStart(b byte) bool { return b&0xc0 != 0x80 }
