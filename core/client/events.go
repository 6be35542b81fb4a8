package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Screenshot streams a task's latest screenshot.
func (c *Client) Screenshot(ctx context.Context, id string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/tasks/"+esc(id)+"/screenshot", w)
}

// Export streams a task's session as json, markdown or html.
func (c *Client) Export(ctx context.Context, id, format string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/tasks/"+esc(id)+"/export?format="+url.QueryEscape(format), w)
}

// Activity returns a task's events after seq since.
func (c *Client) Activity(ctx context.Context, id string, since int64) (wire.Activity, error) {
	var a wire.Activity
	return a, c.call(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%s/activity?since=%d", esc(id), since), nil, &a)
}

// Events follows a task's event stream (SSE) from seq since, calling fn
// for each event, until the stream ends after the terminal status, fn
// returns an error, or ctx ends.
func (c *Client) Events(ctx context.Context, id string, since int64, fn func(wire.Event) error) error {
	resp, err := c.send(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%s/events?since=%d", esc(id), since), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var (
		data  []byte
		event string
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		case line == "" && event == "error":
			// The helper could not read the log: its message is a JSON string.
			var msg string
			if json.Unmarshal(data, &msg) != nil {
				msg = string(data)
			}
			return errdefs.Unavailablef("event stream: %s", msg)
		case line == "" && len(data) > 0:
			event = ""
			var e wire.Event
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			data = data[:0]
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("event stream: %w", err)
	}
	return nil
}
