// Package llm is Hivecrew's client of language models, in three
// protocols: OpenAI's chat completions (any OpenAI-compatible endpoint:
// OpenRouter, Ollama, LM Studio, vLLM, gateways) and its Responses API,
// both on github.com/sashabaranov/go-openai (chat.go, responses.go), and
// Anthropic's Messages API on the official
// github.com/anthropics/anthropic-sdk-go (anthropic.go). The agent talks to
// it in a provider-neutral conversation (conversation.go): each backend
// translates it to its wire format and its answers back, carrying what a
// provider requires returned (thinking signatures, encrypted reasoning,
// computer-call ids) without the agent seeing it. Claude's computer tool
// and OpenAI's computer-use model act on a declared display
// (computer.go). Every backend streams (the user watches text and
// reasoning as they come), retries with exponential backoff and jitter on
// 429, 5xx, overloads, timeouts and broken answers (honouring
// Retry-After), reports usage with prompt-cache reads and writes and its
// cost, lists models and tests a connection. A Client holds no state that
// one task could leak into another: every agent has its own.
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

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Config configures a Client. BaseURL (but for the vendor types, whose
// default it has) and Model are required.
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
	// ReasoningEffort, if set, is the reasoning the model is asked for:
	// reasoning_effort (chat), reasoning.effort (Responses), or a thinking
	// budget (Anthropic: thinkingBudget).
	ReasoningEffort string
	// Backend is an OpenAI provider's API: BackendChatCompletions or
	// BackendResponses (the default of its type when empty).
	Backend string
	// CacheMarks puts prompt-cache breakpoints on the system prompt and
	// the newest message of chat requests (see AcceptsCacheMarks).
	// Anthropic's backend always places its own.
	CacheMarks bool
}

// Client calls one model of one provider.
type Client struct {
	cfg  Config
	be   backend
	doer recordingDoer
}

// backend is one protocol.
type backend interface {
	// send makes one attempt at req, streaming its text and reasoning to
	// onDelta when it is set.
	send(ctx context.Context, req *Request, onDelta func(Delta)) (Reply, error)
	// models lists the provider's models.
	models(ctx context.Context) ([]ModelInfo, error)
	// native is the computer tool the model has of its own, "" for none
	// (NativeAnthropic, NativeOpenAI).
	native() string
}

// New returns a client.
func New(cfg Config) (*Client, error) {
	t, err := NormalizeType(cfg.Type)
	if err != nil {
		return nil, err
	}
	cfg.Type = t
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL(t)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
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
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 30 * time.Second
	}
	switch cfg.Backend {
	case "":
		cfg.Backend = DefaultBackend(t)
	case BackendChatCompletions, BackendResponses:
	default:
		return nil, errdefs.Invalidf("backend %q: want %s or %s", cfg.Backend, BackendChatCompletions, BackendResponses)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c := &Client{cfg: cfg, doer: recordingDoer{hc}}
	switch {
	case t == TypeAnthropic:
		c.be, err = newAnthropic(c)
	case cfg.Backend == BackendResponses:
		c.be = newResponses(c)
	default:
		c.be = newChat(c)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SetOnRetry sets Config.OnRetry; call it before the client's first call.
func (c *Client) SetOnRetry(f func(attempt int, wait time.Duration, err error)) { c.cfg.OnRetry = f }

// MaxAttempts is how many attempts one call may take.
func (c *Client) MaxAttempts() int { return c.cfg.MaxAttempts }

// Model is the model the client calls.
func (c *Client) Model() string { return c.cfg.Model }

// Type is the provider's protocol.
func (c *Client) Type() string { return c.cfg.Type }

// CachesByBreakpoints says the backend marks its requests' prompts for
// the provider's cache (Anthropic's breakpoints), where a request reads
// what earlier ones wrote at a tenth of the input price: one that repeats
// the last request and adds a question costs little more than the
// question and its answer.
func (c *Client) CachesByBreakpoints() bool { return c.cfg.Type == TypeAnthropic }

// Native is the computer tool the model has of its own: NativeAnthropic
// (Claude's computer tool), NativeOpenAI (computer-use-preview), or ""
// when it acts through function tools.
func (c *Client) Native() string { return c.be.native() }

// attemptInfo is what one HTTP attempt answered, recorded by recordingDoer.
type attemptInfo struct {
	status     int
	retryAfter time.Duration
}

type attemptKey struct{}

// recordingDoer notes the status and Retry-After of each response into the
// call's attemptInfo (neither client's errors carry headers).
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
	// Status is the HTTP status of the last answer, 0 without one; an
	// error the provider sent inside a stream has the status it stands
	// for (529 for Anthropic's overloaded_error).
	Status int
	// Attempts made.
	Attempts int
	// Retryable says waiting and retrying may help (and was tried).
	Retryable bool
	Message   string
	// Code is the provider's error code or type, when it gave one
	// ("context_length_exceeded", "overloaded_error").
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

// apiError is what a provider said of a failure, read from either
// client's error types (apierror.go).
type apiError struct {
	// status is the HTTP status the error stands for (that of an error
	// sent inside a stream, which came with 200, by its type); 0 when
	// unknown.
	status        int
	code, message string
}

// describe explains a failure for the user.
func describe(status int, err error) string {
	msg := err.Error()
	if a, ok := explain(err); ok && a.message != "" {
		msg = a.message
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("the provider refused the API key (HTTP %d): %s", status, msg)
	case status == http.StatusNotFound:
		return fmt.Sprintf("the provider does not know this model or endpoint (HTTP 404): %s", msg)
	case status == http.StatusTooManyRequests:
		return fmt.Sprintf("the provider is rate limiting (HTTP 429): %s", msg)
	case status == 529:
		return fmt.Sprintf("the provider is overloaded (HTTP 529): %s", msg)
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
		var final *Error
		if errors.As(err, &final) && final.Attempts == 0 {
			// An answer that is not worth asking again (a refusal, a
			// content filter): the call's verdict as it is.
			final.Attempts = attempt
			return final
		}
		status := info.status
		broke := status == http.StatusOK // the answer broke after its status line
		a, explained := explain(err)
		if broke {
			status = 0
			// An error the provider sent inside its stream carries the
			// status it stands for.
			if explained && a.status != 0 {
				status, broke = a.status, false
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
			return &Error{Status: status, Attempts: attempt, Retryable: retry, Message: msg, Code: a.code}
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
