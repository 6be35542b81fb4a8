package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hivecrew/hivecrew/core/store"
)

// TestHostToolPanicIsAToolError: a host tool that panics (a bug, or a
// parser meeting a page or an MCP answer made to break it) fails its call
// with an error the model reads; the helper does not crash and the task
// goes on to its next call and its end.
func TestHostToolPanicIsAToolError(t *testing.T) {
	l := newLLM(t, append([]turn{
		{calls: []openai.ToolCall{call("explode", map[string]any{"at": 9})}},
		{calls: []openai.ToolCall{call("echo", map[string]any{"text": "still here"})}},
	}, done(true, "ok")...)...)
	params := json.RawMessage(`{"type":"object","properties":{"at":{"type":"integer"},"text":{"type":"string"}}}`)
	e := newEnvWith(t, l, nil, nil, func(c *Config) {
		c.HostTools = []HostTool{
			{Name: "explode", Description: "Panics.", Params: params, Timeout: time.Second,
				Run: func(_ context.Context, raw json.RawMessage) (string, error) {
					var in struct{ At int }
					json.Unmarshal(raw, &in)
					return string([]rune("")[in.At:]), nil // out of range
				}},
			{Name: "echo", Description: "Echoes.", Params: params, Timeout: time.Second,
				Run: func(_ context.Context, raw json.RawMessage) (string, error) {
					var in struct{ Text string }
					json.Unmarshal(raw, &in)
					return "echo: " + in.Text, nil
				}},
		}
	})
	res := wait(t, e.run())
	if res.Status != store.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	reqs := l.requests()
	if !strings.Contains(reqs[1], "explode failed (an internal error, logged by the helper)") {
		t.Errorf("the model was not told the call failed:\n%s", reqs[1])
	}
	if !strings.Contains(reqs[2], "echo: still here") {
		t.Errorf("the next call did not run")
	}
}
