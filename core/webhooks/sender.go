package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of each delivery.
const (
	// SignatureHeader is "t=UNIX,v1=HEX", HEX the HMAC-SHA256 of
	// "UNIX.BODY" with the webhook's secret.
	SignatureHeader = "X-Hivecrew-Signature"
	EventHeader     = "X-Hivecrew-Event"
)

// Config configures a Sender. Hooks and Log are required.
type Config struct {
	// Hooks returns the webhooks, with their secrets.
	Hooks func(ctx context.Context) ([]Hook, error)
	Log   *slog.Logger
	// QueueSize bounds the notices waiting to be sent; default 64.
	QueueSize int
	// Backoff is the first wait before a retry, doubled at each; default
	// 1 s (1, 2, 4, 8 s).
	Backoff time.Duration
	// Attempts is how often a delivery is tried; default 5.
	Attempts int
	// Timeout bounds each attempt; default 10 s.
	Timeout time.Duration
	// Parallel bounds the deliveries in flight; default 4.
	Parallel int
	// Client sends the requests; default one that follows no redirect.
	Client *http.Client
}

// Sender delivers notices to the webhooks. Notify may be called from any
// goroutine; Run delivers until its context ends.
type Sender struct {
	cfg   Config
	queue chan Payload
}

// New returns a Sender; call Run to deliver.
func New(cfg Config) (*Sender, error) {
	if cfg.Hooks == nil || cfg.Log == nil {
		return nil, errors.New("webhooks: Hooks and Log are required")
	}
	cfg.QueueSize = cmp.Or(cfg.QueueSize, 64)
	cfg.Backoff = cmp.Or(cfg.Backoff, time.Second)
	cfg.Attempts = cmp.Or(cfg.Attempts, 5)
	cfg.Timeout = cmp.Or(cfg.Timeout, 10*time.Second)
	cfg.Parallel = cmp.Or(cfg.Parallel, 4)
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Sender{cfg: cfg, queue: make(chan Payload, cfg.QueueSize)}, nil
}

// Notify queues p for every webhook that wants it. It never blocks: when
// the queue is full, p is dropped and logged.
func (s *Sender) Notify(p Payload) {
	if p.Time.IsZero() {
		p.Time = time.Now().UTC()
	}
	select {
	case s.queue <- p:
	default:
		s.cfg.Log.Warn("webhook queue full: notice dropped", "event", p.Event, "task", p.Task.ID)
	}
}

// Run delivers queued notices until ctx ends, then waits for the
// deliveries in flight (which ctx's end interrupts) and returns.
func (s *Sender) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, s.cfg.Parallel)
	for {
		var p Payload
		select {
		case <-ctx.Done():
			return
		case p = <-s.queue:
		}
		hooks, err := s.cfg.Hooks(ctx)
		if err != nil {
			s.cfg.Log.Error("read webhooks", "event", p.Event, "task", p.Task.ID, "err", err)
			continue
		}
		for _, h := range hooks {
			if h.Disabled || !h.Wants(p.Event) {
				continue
			}
			select {
			case <-ctx.Done():
				return
			case slots <- struct{}{}:
			}
			wg.Go(func() {
				defer func() { <-slots }()
				s.deliver(ctx, h, p)
			})
		}
	}
}

// deliver sends p to h, retrying on failure, and logs the outcome.
func (s *Sender) deliver(ctx context.Context, h Hook, p Payload) {
	log := s.cfg.Log.With("webhook", h.Name, "url", Redact(h.URL), "event", p.Event, "task", p.Task.ID)
	status, attempts, err := s.Send(ctx, h, p, s.cfg.Attempts)
	switch {
	case err != nil && ctx.Err() != nil:
		log.Info("webhook not delivered: the helper stopped", "attempts", attempts)
	case err != nil:
		log.Warn("webhook not delivered", "attempts", attempts, "status", status, "err", err)
	default:
		log.Debug("webhook delivered", "attempts", attempts, "status", status)
	}
}

// Test sends the webhook whose ID is id a test notice, once, and returns
// the answer's status (0: none) and why it failed.
func (s *Sender) Test(ctx context.Context, id string) (int, error) {
	hooks, err := s.cfg.Hooks(ctx)
	if err != nil {
		return 0, err
	}
	for _, h := range hooks {
		if h.ID == id {
			p := Payload{Event: Test, Task: Task{ID: "test", Title: "Webhook test", Status: "completed",
				Result: "This is a test from Hivecrew."}, Time: time.Now().UTC()}
			status, _, err := s.Send(ctx, h, p, 1)
			return status, err
		}
	}
	return 0, fmt.Errorf("webhook %s cannot be sent (the helper's log says why; a signing secret the secret store lost?)", id)
}

// Send posts p to h, trying at most attempts times: again after an answer
// of 5xx or 429 (after its Retry-After, within bounds) or none, with
// backoff; never after another 4xx or a redirect. It returns the last
// answer's status (0: none), the attempts made, and why it failed.
func (s *Sender) Send(ctx context.Context, h Hook, p Payload, attempts int) (int, int, error) {
	body, err := Body(h.Format, p)
	if err != nil {
		return 0, 0, err
	}
	wait := s.cfg.Backoff
	status := 0
	for n := 1; ; n++ {
		var retryAfter time.Duration
		status, retryAfter, err = s.post(ctx, h, p.Event, body)
		if err == nil || n >= attempts || !retryable(status) || ctx.Err() != nil {
			return status, n, err
		}
		d := wait
		if retryAfter > 0 {
			d = min(retryAfter, maxRetryAfter)
		}
		wait *= 2
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, n, err
		case <-t.C:
		}
	}
}

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = time.Minute

func retryable(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// post makes one attempt: the answer's status (0: none) and Retry-After.
func (s *Sender) post(ctx context.Context, h Hook, e Event, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fmt.Errorf("webhook %s: bad address %s", h.Name, Redact(h.URL))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Hivecrew-Webhook/1")
	req.Header.Set(EventHeader, string(e))
	if h.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(h.Secret, time.Now().Unix(), body))
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		// The error names the whole address: say only its host.
		return 0, 0, fmt.Errorf("no answer from %s: %w", Redact(h.URL), unwrapURLError(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, 0, fmt.Errorf("%s answered a redirect (%s), which webhooks do not follow: give the final address", Redact(h.URL), resp.Status)
	}
	return resp.StatusCode, retryAfterOf(resp.Header.Get("Retry-After")), fmt.Errorf("%s answered %s", Redact(h.URL), resp.Status)
}

func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// retryAfterOf reads a Retry-After of seconds or an HTTP date.
func retryAfterOf(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(min(n, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// Sign returns the signature header of body sent at unix time t.
func Sign(secret string, t int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", t)
	mac.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", t, hex.EncodeToString(mac.Sum(nil)))
}

// Verify checks a signature header as a receiver would: it must be of
// secret over body, and made at most maxAge ago (or ahead).
func Verify(secret, header string, body []byte, maxAge time.Duration) error {
	ts, _, ok := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
	t, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || !strings.HasPrefix(header, "t=") {
		return fmt.Errorf("signature %q is not t=UNIX,v1=HEX", header)
	}
	if !hmac.Equal([]byte(Sign(secret, t, body)), []byte(header)) {
		return errors.New("the signature does not match the body")
	}
	if time.Since(time.Unix(t, 0)).Abs() > maxAge {
		return fmt.Errorf("the signature was made at %s, not within %s of now", time.Unix(t, 0).UTC().Format(time.RFC3339), maxAge)
	}
	return nil
}
