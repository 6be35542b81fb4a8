// Package mcp connects a task to the MCP servers the user configured
// (issue 19.2) and offers their tools to its agent as host tools named
// mcp__SERVER__TOOL.
//
// It is a client of the official Model Context Protocol Go SDK
// (github.com/modelcontextprotocol/go-sdk): its stdio command transport and
// streamable-HTTP transport, sessions, tool listing and calls. Each task
// gets its own connections, made when it starts and closed when it ends, so
// a server's state never passes from one task to another and a server that
// crashed is started afresh for the next task.
//
// The bounds, since a server's answers may carry what it read on the web:
//   - connecting and listing tools take at most ConnectTimeout; a server
//     that does not answer is left out, and the task is told why;
//   - at most MaxTools tools per server are offered, descriptions cut;
//   - a call takes at most the server's timeout; a server that hangs or
//     crashes gives the model a clear tool error, and the task goes on;
//   - an answer is cut to MaxResult bytes; images and other non-text
//     content are described, not passed on.
//
// A stdio server gets a small environment (PATH, HOME, LANG, TMPDIR) and the
// variables configured for it, not the helper's own.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/version"
)

// Bounds.
const (
	ConnectTimeout = 20 * time.Second
	DefaultTimeout = 60 * time.Second
	MaxTools       = 64
	MaxResult      = 64 << 10
)

// Server is one configured MCP server: a stdio command or a streamable-HTTP
// URL.
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Timeout bounds a call (default DefaultTimeout).
	Timeout time.Duration
	// Permission applies to its tools when the task's policy does not
	// name them (default ask).
	Permission config.Permission
}

// NamePattern is what a server's name may be: it prefixes its tools.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// Check reports what is wrong with a server's configuration.
func (s Server) Check() error {
	if !NamePattern.MatchString(s.Name) {
		return fmt.Errorf("MCP server name %q: want 1 to 24 lower-case letters, digits or '-', beginning with a letter or digit", s.Name)
	}
	switch {
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("MCP server %s: give a command (stdio) or a URL (streamable HTTP)", s.Name)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("MCP server %s: give a command or a URL, not both", s.Name)
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return fmt.Errorf("MCP server %s: URL %q is not http(s)", s.Name, s.URL)
	case s.Permission != "" && !s.Permission.Valid():
		return fmt.Errorf("MCP server %s: permission %q is not allow, ask or deny", s.Name, s.Permission)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("MCP server %s: environment variable name %q", s.Name, k)
		}
	}
	for k, v := range s.Headers {
		if k == "" || strings.ContainsAny(k, ":\r\n") || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("MCP server %s: header %q", s.Name, k)
		}
	}
	return nil
}

// Problem is a server that could not be used for a task, in words.
type Problem struct {
	Server string
	Err    error
}

func (p Problem) Error() string { return fmt.Sprintf("MCP server %s: %v", p.Server, p.Err) }

// Sessions are a task's connections to its MCP servers.
type Sessions struct {
	conns []*conn
}

type conn struct {
	server  Server
	session *sdk.ClientSession
	tools   []*sdk.Tool
	stderr  *tail
}

// Connect connects to each server, in parallel, and lists its tools. The
// servers that fail are returned as problems; the others are in Sessions.
func Connect(ctx context.Context, servers []Server) (*Sessions, []Problem) {
	out := &Sessions{}
	var mu sync.Mutex
	var problems []Problem
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			c, err := connect(ctx, s)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, Problem{Server: s.Name, Err: err})
				return
			}
			out.conns = append(out.conns, c)
		})
	}
	wg.Wait()
	return out, problems
}

func connect(ctx context.Context, s Server) (*conn, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Permission == "" {
		s.Permission = config.Ask
	}
	c := &conn{server: s, stderr: &tail{max: 4 << 10}}
	var transport sdk.Transport
	if s.Command != "" {
		path, err := exec.LookPath(s.Command)
		if err != nil {
			return nil, fmt.Errorf("cannot run %q: %w", s.Command, unwrapExec(err))
		}
		cmd := exec.Command(path, s.Args...)
		cmd.Env = serverEnv(s.Env)
		cmd.Stderr = c.stderr
		cmd.Dir = os.TempDir()
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		transport = &sdk.StreamableClientTransport{
			Endpoint:   s.URL,
			HTTPClient: &http.Client{Transport: headers{base: http.DefaultTransport, h: s.Headers}},
			MaxRetries: 1,
		}
	}
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "hivecrew", Version: version.Version}, nil)
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return nil, c.explain("could not start a session", cctx, err)
	}
	c.session = sess
	for t, err := range sess.Tools(cctx, nil) {
		if err != nil {
			sess.Close()
			return nil, c.explain("could not list its tools", cctx, err)
		}
		if len(c.tools) == MaxTools {
			break
		}
		c.tools = append(c.tools, t)
	}
	return c, nil
}

// explain says why a step failed: a timeout as such, and what the server
// wrote to stderr.
func (c *conn) explain(what string, ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", ConnectTimeout)
	}
	if msg := strings.TrimSpace(c.stderr.String()); msg != "" {
		return fmt.Errorf("%s: %v (it wrote: %s)", what, err, oneLine(msg, 300))
	}
	return fmt.Errorf("%s: %v", what, err)
}

// serverEnv is a stdio server's environment: a few of the helper's, and
// the server's own.
func serverEnv(own map[string]string) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range own {
		env = append(env, k+"="+v)
	}
	return env
}

func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// Tools are the servers' tools as host tools.
func (s *Sessions) Tools() []agent.HostTool {
	var out []agent.HostTool
	for _, c := range s.conns {
		for _, t := range c.tools {
			params, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				params = nil
			}
			desc := t.Description
			if t.Title != "" {
				desc = t.Title + ": " + desc
			}
			out = append(out, agent.HostTool{
				Name:        ToolName(c.server.Name, t.Name),
				Description: fmt.Sprintf("[MCP server %s] %s", c.server.Name, oneLine(desc, 900)),
				Params:      params,
				Default:     c.server.Permission,
				Timeout:     c.server.Timeout,
				Run:         c.caller(t.Name),
			})
		}
	}
	return out
}

// ToolName is the name the model sees for a server's tool.
func ToolName(server, tool string) string { return config.MCPToolPrefix + server + "__" + tool }

// caller returns the Run of one of the server's tools.
func (c *conn) caller(tool string) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("MCP server %s did not answer %s within %s", c.server.Name, tool, c.server.Timeout)
			}
			msg := fmt.Sprintf("MCP server %s failed on %s: %v", c.server.Name, tool, err)
			if e := strings.TrimSpace(c.stderr.String()); e != "" {
				msg += " (it wrote: " + oneLine(e, 300) + ")"
			}
			return "", errors.New(msg)
		}
		text := render(res)
		if res.IsError {
			return "", fmt.Errorf("MCP server %s: %s says: %s", c.server.Name, tool, oneLine(text, 2000))
		}
		return text, nil
	}
}

// render turns a result into text for the model, cut to MaxResult.
func render(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch x := c.(type) {
		case *sdk.TextContent:
			b.WriteString(x.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[an image, %s, %d bytes, not shown]", x.MIMEType, len(x.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio, %s, %d bytes, not played]", x.MIMEType, len(x.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[resource %s: %s]", x.Name, x.URI)
		case *sdk.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				fmt.Fprintf(&b, "[resource %s]\n%s", x.Resource.URI, x.Resource.Text)
			} else if x.Resource != nil {
				fmt.Fprintf(&b, "[resource %s, %d bytes, not shown]", x.Resource.URI, len(x.Resource.Blob))
			}
		default:
			b.WriteString("[content of an unknown kind, not shown]")
		}
		if b.Len() > MaxResult {
			break
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	s := b.String()
	if len(s) > MaxResult {
		s = s[:MaxResult] + fmt.Sprintf("\n… [cut at %d bytes]", MaxResult)
	}
	return s
}

// Close ends every session (a stdio server's stdin is closed, and it is
// stopped if it does not exit).
func (s *Sessions) Close() {
	if s == nil {
		return
	}
	var wg sync.WaitGroup
	for _, c := range s.conns {
		wg.Go(func() { c.session.Close() })
	}
	wg.Wait()
}

// headers adds a server's headers to each request.
type headers struct {
	base http.RoundTripper
	h    map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, nil))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Stored is what the secret store keeps of a server: the values of its
// environment variables and headers.
type Stored struct {
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// FromStore makes a server of its stored row and its secret values (the
// JSON of Stored, or "" for none).
func FromStore(m store.MCPServer, secret string) (Server, error) {
	var st Stored
	if secret != "" {
		if err := json.Unmarshal([]byte(secret), &st); err != nil {
			return Server{}, fmt.Errorf("MCP server %s: its stored environment and headers are not readable: %v", m.Name, err)
		}
	}
	return Server{
		Name: m.Name, Command: m.Command, Args: m.Args, URL: m.URL, Env: st.Env, Headers: st.Headers,
		Timeout: time.Duration(m.TimeoutSeconds) * time.Second, Permission: config.Permission(m.Permission),
	}, nil
}

// ToolNames lists the tools a server offers, for Settings' test button.
func (s *Sessions) ToolNames() []string {
	var out []string
	for _, c := range s.conns {
		for _, t := range c.tools {
			out = append(out, ToolName(c.server.Name, t.Name))
		}
	}
	return out
}
