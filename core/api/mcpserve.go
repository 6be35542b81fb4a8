package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/mcpserve"
)

// mcpPath is the MCP endpoint (streamable HTTP, TCP listener only).
const mcpPath = "/api/v1/mcp"

// mcpCredentials are the headers of an MCP request that say who calls:
// its tools' requests to the API carry them, and nothing else of it.
var mcpCredentials = []string{"Authorization", "Cookie", SessionHeader}

// mcpEndpoint serves Hivecrew's tools (core/mcpserve) over MCP's
// streamable HTTP, stateless: every POST stands alone, with its own
// credentials (mcpserve.HTTPHandler). The guard has checked its Host, its Origin and its
// credentials (strictly: a session cookie needs its token whatever the
// method). Each tool's requests then go to the API's own routes (routes
// returns them) with that request's credentials, checked again there
// like any request's: an API key or a web session may do over MCP what
// it may do over REST, step-up included, and nothing more; the
// listener's address (loopback) is trusted for nothing.
func (a *API) mcpEndpoint(routes func() http.Handler) http.Handler {
	srv, err := mcpserve.New(mcpserve.Config{
		Helper: func(extra *mcp.RequestExtra) (mcpserve.Helper, error) {
			return a.mcpCaller(routes(), extra)
		},
		Version: a.cfg.Version,
		Log:     a.cfg.Log,
		DownloadURL: func(id, name string) string {
			return "/api/v1/tasks/" + url.PathEscape(id) + "/files/" + url.PathEscape(name) + "?type=output"
		},
	})
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			WriteError(w, http.StatusInternalServerError, "internal_error", err.Error())
		})
	}
	h := mcpserve.HTTPHandler(srv, mcp.StreamableHTTPOptions{
		// The guard checks the Host, as it does for every request (and
		// lets remote access through when Settings allow it).
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxJSONBytes,
		Logger:                     a.cfg.Log,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerAddrKey{}, r.RemoteAddr)))
	})
}

// callerAddrKey is the context key of the address an MCP request came
// from: its tools' requests come from there too (a paired device's
// session is bound to its address).
type callerAddrKey struct{}

// mcpCaller is the client of one MCP request's tool: its requests go to
// routes with the credentials of the MCP request (extra's header).
func (a *API) mcpCaller(routes http.Handler, extra *mcp.RequestExtra) (mcpserve.Helper, error) {
	if routes == nil || extra == nil || extra.Header == nil {
		return nil, errors.New("this MCP call came without its HTTP request's credentials: refused")
	}
	creds := http.Header{}
	for _, k := range mcpCredentials {
		if v := extra.Header.Values(k); len(v) > 0 {
			creds[http.CanonicalHeaderKey(k)] = v
		}
	}
	return client.NewTransport(&callerTransport{a: a, routes: routes, creds: creds}), nil
}

// callerTransport hands a request to the API's routes in this process,
// as its caller: with the caller's credentials and address, authenticated
// as any request is (strictly), and its answer streamed back through a
// pipe.
type callerTransport struct {
	a      *API
	routes http.Handler
	creds  http.Header
}

func (t *callerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx)
	for _, k := range mcpCredentials {
		r.Header.Del(k)
	}
	for k, v := range t.creds {
		r.Header[k] = v
	}
	r.RequestURI = r.URL.RequestURI()
	r.RemoteAddr, _ = req.Context().Value(callerAddrKey{}).(string)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, ready: make(chan struct{})}
	// A caller that goes away unblocks the handler's writes and its own
	// reads.
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	go func() {
		defer func() {
			if p := recover(); p != nil {
				t.a.cfg.Log.Error("MCP tool's request panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				w.WriteHeader(http.StatusInternalServerError)
				pw.CloseWithError(fmt.Errorf("the helper failed on %s %s", r.Method, r.URL.Path))
				return
			}
			w.WriteHeader(http.StatusOK) // nothing written is an empty 200
			pw.Close()
		}()
		if r, ok := t.a.signedIn(w, r, true); ok {
			t.routes.ServeHTTP(w, r)
		}
	}()
	<-w.ready
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &pipeBody{r: pr, done: func() { stop(); cancel() }}, ContentLength: -1, Request: req,
	}, nil
}

// pipeResponse is a ResponseWriter whose body goes down a pipe; ready is
// closed once the status and header are set (sent is the header then).
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	status int
	sent   http.Header
}

func (p *pipeResponse) Header() http.Header { return p.header }

func (p *pipeResponse) WriteHeader(status int) {
	p.once.Do(func() {
		p.status, p.sent = status, p.header.Clone()
		close(p.ready)
	})
}

func (p *pipeResponse) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.body.Write(b)
}

// Flush sends the header; what is written goes through the pipe at once.
func (p *pipeResponse) Flush() { p.WriteHeader(http.StatusOK) }

// pipeBody is the reading end; closing it stops the handler's writes.
type pipeBody struct {
	r    *io.PipeReader
	done func()
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *pipeBody) Close() error {
	b.done()
	return b.r.Close()
}
