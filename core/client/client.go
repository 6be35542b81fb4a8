// Package client is the one Go client of the helper's API, used by the CLI,
// the menu-bar app and the tests. It talks over the helper's unix socket
// (trusted by its file mode) or over TCP with a bearer API key.
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Client calls one helper.
type Client struct {
	base string // scheme://host, no trailing slash
	key  string
	http *http.Client
}

// NewUnix returns a client for the helper listening on the unix socket at path.
func NewUnix(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}
	return &Client{base: "http://helper", http: &http.Client{Transport: tr}}
}

// NewTCP returns a client for the helper at baseURL (http://127.0.0.1:5482)
// authenticating with apiKey.
func NewTCP(baseURL, apiKey string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, http: &http.Client{}}
}

// NewTransport returns a client whose requests rt carries (the helper's
// MCP endpoint hands its tools' requests to the API's own routes this
// way, with the caller's credentials); it adds no credentials itself.
func NewTransport(rt http.RoundTripper) *Client {
	return &Client{base: "http://helper", http: &http.Client{Transport: rt}}
}

// Health returns nil when the helper answers /health with OK.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK || string(body) != "OK" {
		return errdefs.Unavailablef("helper health: %s %q", resp.Status, body)
	}
	return nil
}

// WaitHealthy polls Health until it succeeds or ctx ends.
func (c *Client) WaitHealthy(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := c.Health(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("helper not healthy: %w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// Shutdown asks the helper to stop (unix socket only) and returns once the
// request is accepted.
func (c *Client) Shutdown(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodPost, "/internal/v1/shutdown", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return decodeError(resp)
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, unreachable(err)
	}
	return resp, nil
}

// unreachable is the error of a request that reached no helper.
func unreachable(err error) error { return errdefs.Unavailablef("helper not reachable: %v", err) }

// decodeError turns an API error response into an error of the matching class.
func decodeError(resp *http.Response) error {
	var body struct {
		Error struct{ Message, Code string }
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
	}
	var class error
	switch resp.StatusCode {
	case http.StatusNotFound:
		class = errdefs.ErrNotFound
	case http.StatusConflict:
		class = errdefs.ErrConflict
	case http.StatusBadRequest:
		class = errdefs.ErrInvalid
	case http.StatusRequestEntityTooLarge:
		class = errdefs.ErrTooLarge
	case http.StatusServiceUnavailable:
		class = errdefs.ErrUnavailable
	case http.StatusNotImplemented:
		class = errdefs.ErrUnsupported
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s (HTTP %d)", msg, resp.StatusCode)
	default:
		return fmt.Errorf("helper answered %s: %s", resp.Status, msg)
	}
	return errdefs.New(class, msg)
}
