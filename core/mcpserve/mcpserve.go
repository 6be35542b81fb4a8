// Package mcpserve offers Hivecrew to other agents (Claude Code, Codex,
// Cursor) as an MCP server: tools to run a task and wait for it, look at
// tasks, answer an agent's question, approve or deny a tool it asks for,
// cancel a task, and list and read a task's outputs.
//
// Every tool calls the helper's REST API through a core/client.Client, so
// a tool may do exactly what its caller may do there: `hivecrew mcp serve`
// (stdio) uses the CLI's own client (the helper's unix socket), and the
// helper's HTTP endpoint one that carries each request's own credentials
// (API key, or web session with its step-up) into the API's routes.
//
// Inputs are checked by their schema (types, bounds, known fields only)
// before the API checks them again. Outputs are bounded, and every string
// that comes from a task (the model's words, the guest's file names, the
// helper's errors about them) goes through the printable filter of
// core/files before it reaches the caller: a task's outputs are listed as
// names and sizes, and read as filtered text, a sniffed image, or not at
// all (a binary file is pointed at, never sent raw).
package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Helper is what the tools need of the helper's API; *client.Client has it.
type Helper interface {
	CreateTask(ctx context.Context, in wire.CreateTask, files ...string) (wire.Task, error)
	Task(ctx context.Context, id string) (wire.Task, error)
	ListTasks(ctx context.Context, q client.TaskQuery) (wire.TaskList, error)
	Answer(ctx context.Context, id, questionID, answer string) error
	Respond(ctx context.Context, id, permissionID string, approved bool) error
	TaskAction(ctx context.Context, id string, a wire.TaskAction) (wire.Task, error)
	TaskFiles(ctx context.Context, id string) (wire.TaskFiles, error)
	Download(ctx context.Context, id, name, kind string, w io.Writer) error
}

var _ Helper = (*client.Client)(nil)

// Config configures the server. Helper is required.
type Config struct {
	// Helper returns the client one request's tool uses; extra is the
	// request's HTTP side (its header), nil over stdio.
	Helper func(extra *mcp.RequestExtra) (Helper, error)
	// Version is the server's version, as the client is told.
	Version string
	// Log, if set, logs the protocol's trouble.
	Log *slog.Logger
	// Poll is how often a waiting tool looks at its task (default 500 ms).
	Poll time.Duration
	// DownloadURL, if set, says where a caller fetches an output file
	// (the REST API's path, for HTTP callers); "" leaves it out.
	DownloadURL func(taskID, name string) string
}

// Limits of the tools.
const (
	// DefaultWait is how long run_task waits when not told: under the
	// 60-second tool timeout some clients (Codex) have by default.
	DefaultWait = 50
	// MaxWait bounds any wait, in seconds.
	MaxWait = 1800
	// defaultPoll is Config.Poll's default.
	defaultPoll = 500 * time.Millisecond
)

// instructions tell the calling model how the tools fit together.
const instructions = `Hivecrew runs computer-use agents in sandboxed VMs on this computer.
run_task starts a task and waits up to waitSeconds for it to end. It returns early when the agent needs you:
a question (answer it with answer_question) or a tool waiting for approval (approve_tool, approved true or false).
A task still running is not lost: get_task with waitSeconds waits again. cancel_task stops one.
When a task has ended, get_task_outputs lists the files it made (name, size, where it was saved)
and read_task_output reads a text file or shows an image.`

// New returns the server with its tools.
func New(cfg Config) (*mcp.Server, error) {
	if cfg.Helper == nil {
		return nil, errors.New("mcpserve: Config.Helper is required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = defaultPoll
	}
	s := &server{cfg: cfg}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hivecrew", Title: "Hivecrew", Version: or(cfg.Version, "dev")},
		&mcp.ServerOptions{Instructions: instructions, Logger: cfg.Log, Capabilities: &mcp.ServerCapabilities{}})
	srv.AddReceivingMiddleware(s.guard)
	s.addTools(srv)
	return srv, nil
}

// guard stands between the caller and the SDK's handling of a request:
// a tool call's null arguments are taken as none ({}), which the SDK
// would otherwise fill with its schema's defaults by writing into a nil
// map (a panic that takes the helper down with it); a panic of any
// request is answered as an error, not left to end the process; and a
// request that came over HTTP (HTTPHandler) ends when its POST does.
func (s *server) guard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				if s.cfg.Log != nil {
					s.cfg.Log.Error("MCP request panicked", "method", method, "panic", p)
				}
				res, err = nil, fmt.Errorf("hivecrew failed on %s", method)
			}
		}()
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			if args := bytes.TrimSpace(call.Params.Arguments); len(args) == 0 || bytes.Equal(args, []byte("null")) {
				call.Params.Arguments = json.RawMessage("{}")
			}
		}
		if r, ok := ctx.Value(requestKey{}).(context.Context); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer context.AfterFunc(r, cancel)()
			defer cancel()
		}
		return next(ctx, method, req)
	}
}

// requestKey is the context key of the HTTP request a call came in.
type requestKey struct{}

// HTTPHandler serves srv over MCP's streamable HTTP, stateless: every
// POST stands alone, with its own credentials, and no session outlives
// it. A call ends when its POST does: a tool waiting for a task stops
// when its caller goes away (the SDK detaches a call from its request).
func HTTPHandler(srv *mcp.Server, opts mcp.StreamableHTTPOptions) http.Handler {
	opts.Stateless = true
	opts.PropagateRequestCancellation = true
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, r.Context())))
	})
}

// server holds what the tools share.
type server struct {
	cfg Config
}

// helper returns the client of one call.
func (s *server) helper(extra *mcp.RequestExtra) (Helper, error) {
	h, err := s.cfg.Helper(extra)
	if err != nil {
		return nil, callerError(err)
	}
	return h, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
