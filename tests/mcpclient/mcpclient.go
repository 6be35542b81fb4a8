// Package mcpclient is the tests' caller of Hivecrew's MCP server
// (core/mcpserve): the official MCP Go SDK's client, connected to `hivecrew
// mcp serve` over stdio or to the helper's endpoint over streamable HTTP
// with whatever headers a test sends (a key, a cookie, a forged Origin or
// Host), and a raw initialize request for the attacker's moves the SDK
// would not make.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is the helper's MCP endpoint.
const Path = "/api/v1/mcp"

// Protocol is the protocol version the tests' client asks for: the one
// the agents that call Hivecrew speak today (the SDK's own latest
// changes how a call's end reaches the server).
const Protocol = "2025-06-18"

var session = &mcp.ClientSessionOptions{ProtocolVersion: Protocol}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "hivecrew-test", Version: "1.0"}, nil)
}

// Stdio starts cmd (`hivecrew mcp serve`) and connects to it.
func Stdio(ctx context.Context, cmd *exec.Cmd) (*mcp.ClientSession, error) {
	return newClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, session)
}

// HTTP connects to the endpoint of the helper at addr (host:port),
// sending hdr with every request; a "Host" in hdr replaces the request's
// Host.
func HTTP(ctx context.Context, addr string, hdr http.Header) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: headers{hdr}}
	return newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + Path, HTTPClient: hc, MaxRetries: -1}, session)
}

// headers adds its header to every request.
type headers struct{ h http.Header }

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		if http.CanonicalHeaderKey(k) == "Host" {
			r.Host = v[0]
			continue
		}
		r.Header[http.CanonicalHeaderKey(k)] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Initialize posts an MCP initialize request to the endpoint of the
// helper at addr with hdr, as a client would without the SDK, and
// returns the answer's status and body.
func Initialize(addr string, hdr http.Header) (int, string, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + Protocol + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+Path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := headers{hdr}.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), nil
}

// Refused checks that the endpoint of the helper at addr refuses a
// client sending hdr: a raw initialize gets status (and no answer of the
// server's), and the SDK's client cannot connect.
func Refused(ctx context.Context, addr string, hdr http.Header, status int) error {
	got, body, err := Initialize(addr, hdr)
	if err != nil {
		return err
	}
	if got != status || strings.Contains(body, "protocolVersion") {
		return fmt.Errorf("initialize: %d %s; want %d", got, body, status)
	}
	if s, err := HTTP(ctx, addr, hdr); err == nil {
		s.Close()
		return errors.New("the SDK's client connected")
	}
	return nil
}

// ToolError is a tool's answer with isError set: its text.
type ToolError struct{ Text string }

func (e ToolError) Error() string { return "tool error: " + e.Text }

// Call calls tool with args and decodes its structured answer into out
// (may be nil); an answer with isError is a ToolError.
func Call(ctx context.Context, s *mcp.ClientSession, tool string, args map[string]any, out any) (*mcp.CallToolResult, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	if res.IsError {
		return res, ToolError{Text: Text(res)}
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return res, err
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return res, fmt.Errorf("%s: structured answer %s: %w", tool, raw, err)
		}
	}
	return res, nil
}

// Text is the text of an answer's content.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
