// Package llm is Hivecrew's client of OpenAI-compatible chat-completion
// endpoints (OpenAI, OpenRouter, Anthropic's compatible endpoint, Ollama, LM
// Studio, vLLM) on github.com/sashabaranov/go-openai: function tools, images
// as data URLs, JSON-schema structured output for the completion check,
// streamed answers (stream.go) over Chat Completions or the Responses API
// (responses.go), retries with exponential backoff and jitter on 429, 5xx, timeouts and
// broken responses (honouring Retry-After), token usage and cost, model
// listing and a connection test. A Client holds no state that one task could
// leak into another: every agent has its own.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Config configures a Client. BaseURL and Model are required.
type Config struct {
	// Type is the provider's protocol (TypeOpenAICompatible when empty).
	Type    string
	BaseURL string
	APIKey  string
	Model   string
	// Timeout bounds one attempt; default 120 s.
	Timeout time.Duration
	// MaxAttempts bounds the attempts of one call; default 5.
	MaxAttempts int
	// BackoffBase is the first retry's delay before jitter; default 1 s,
	// doubling up to BackoffMax (default 30 s).
	BackoffBase, BackoffMax time.Duration
	// OnRetry, if set, hears about each retry before its wait.
	OnRetry func(attempt int, wait time.Duration, err error)
	// HTTPClient, if set, sends the requests.
	HTTPClient *http.Client
	// Prices estimate the cost of the tokens used.
	Prices PriceTable
	// Organization, if set, is sent as the OpenAI-Organization header.
	Organization string
	// ReasoningEffort, if set, is the reasoning_effort of every chat
	// request.
	ReasoningEffort string
	// Backend is the provider's API: BackendChatCompletions (the default)
	// or BackendResponses.
	Backend string
	// CacheMarks puts prompt-cache breakpoints on the system prompt and
	// the newest message of chat requests (see AcceptsCacheMarks).
	CacheMarks bool
}

// Client calls one model of one provider.
type Client struct {
	cfg Config
	api *openai.Client
	// baseURL and doer send chat completions and responses (see post).
	baseURL string
	doer    recordingDoer
	wire    wireCache
}

// New returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, errdefs.Invalidf("an LLM client needs a base URL and a model")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 120 * time.Second
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = time.Second
	}
	switch cfg.Backend {
	case "":
		cfg.Backend = BackendChatCompletions
	case BackendChatCompletions, BackendResponses:
	default:
		return nil, errdefs.Invalidf("backend %q: want %s or %s", cfg.Backend, BackendChatCompletions, BackendResponses)
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 30 * time.Second
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = recordingDoer{hc}
	oc.OrgID = cfg.Organization
	return &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), baseURL: oc.BaseURL, doer: recordingDoer{hc}}, nil
}

// SetOnRetry sets Config.OnRetry; call it before the client's first call.
func (c *Client) SetOnRetry(f func(attempt int, wait time.Duration, err error)) { c.cfg.OnRetry = f }

// MaxAttempts is how many attempts one call may take.
func (c *Client) MaxAttempts() int { return c.cfg.MaxAttempts }

// Model is the model the client calls.
func (c *Client) Model() string { return c.cfg.Model }

// attemptInfo is what one HTTP attempt answered, recorded by recordingDoer.
type attemptInfo struct {
	status     int
	retryAfter time.Duration
}

type attemptKey struct{}

// recordingDoer notes the status and Retry-After of each response into the
// call's attemptInfo (go-openai's errors do not carry headers).
type recordingDoer struct{ hc *http.Client }

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.hc.Do(req)
	if info, ok := req.Context().Value(attemptKey{}).(*attemptInfo); ok && resp != nil {
		info.status = resp.StatusCode
		info.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return resp, err
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 5*time.Minute)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 5*time.Minute)
	}
	return 0
}

// Error is a failed call.
type Error struct {
	// Status is the HTTP status of the last answer, 0 without one.
	Status int
	// Attempts made.
	Attempts int
	// Retryable says waiting and retrying may help (and was tried).
	Retryable bool
	Message   string
	// Code is the provider's error code, when it gave one
	// ("context_length_exceeded").
	Code string
}

func (e *Error) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("%s (after %d attempts)", e.Message, e.Attempts)
	}
	return e.Message
}

// Is maps failures to error classes: refused keys and bad requests are
// invalid, the rest unavailable.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		return target == errdefs.ErrInvalid
	}
	return target == errdefs.ErrUnavailable
}

// describe explains a failure for the user.
func describe(status int, err error) string {
	var api *openai.APIError
	msg := err.Error()
	if errors.As(err, &api) && api.Message != "" {
		msg = api.Message
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("the provider refused the API key (HTTP %d): %s", status, msg)
	case status == http.StatusNotFound:
		return fmt.Sprintf("the provider does not know this model or endpoint (HTTP 404): %s", msg)
	case status == http.StatusTooManyRequests:
		return fmt.Sprintf("the provider is rate limiting (HTTP 429): %s", msg)
	case status >= 500:
		return fmt.Sprintf("the provider failed (HTTP %d): %s", status, msg)
	case status > 0:
		return fmt.Sprintf("the provider refused the request (HTTP %d): %s", status, msg)
	}
	return "the provider could not be reached: " + msg
}

// retryable says whether an attempt's failure is worth another try.
func retryable(status int, err error, attemptCtx context.Context) bool {
	switch {
	case status == http.StatusTooManyRequests || status >= 500:
		return true
	case status >= 400:
		return false
	case errors.Is(attemptCtx.Err(), context.DeadlineExceeded):
		return true // this attempt timed out
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, errNoChoices) || errors.Is(err, errStalled) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "unexpected end of JSON")
}

// backoff is the wait before retry n (from 1): exponential with full jitter.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.BackoffBase << min(n-1, 10)
	d = min(d, c.cfg.BackoffMax)
	return d/2 + rand.N(d/2+1)
}

// do runs call with retries. Each attempt gets the client's timeout and
// records what the provider answered.
func (c *Client) do(ctx context.Context, call func(context.Context) error) error {
	return c.doFor(ctx, c.cfg.Timeout, call)
}

// doFor is do with each attempt bounded by limit.
func (c *Client) doFor(ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		info := &attemptInfo{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, info), limit)
		err := call(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		status := info.status
		broke := status == http.StatusOK // the answer broke after its status line
		if broke {
			status = 0
			// An error the provider sent inside its stream carries the
			// status it stands for (see streamError).
			if api := (*openai.APIError)(nil); errors.As(err, &api) && api.HTTPStatusCode != 0 {
				status, broke = api.HTTPStatusCode, false
			}
		}
		if timedOut {
			err = fmt.Errorf("no answer within %s", limit)
		}
		retry := retryable(status, err, actx)
		msg := describe(status, err)
		if broke && !timedOut {
			msg = "the provider's answer broke off: " + err.Error()
		}
		if !retry || attempt >= c.cfg.MaxAttempts {
			var code string
			if api := (*openai.APIError)(nil); errors.As(err, &api) && api.Code != nil {
				code = fmt.Sprint(api.Code)
			}
			return &Error{Status: status, Attempts: attempt, Retryable: retry, Message: msg, Code: code}
		}
		wait := info.retryAfter
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(attempt, wait, errors.New(msg))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
