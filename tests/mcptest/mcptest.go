// Package mcptest is a local MCP server for tests (issue 19.2), made with
// the official Go SDK: lookup answers with what it was asked and a value
// of its environment, hang never answers, crash exits the process, big
// answers 200 KB. fake-mcp serves it over stdio; Handler over streamable
// HTTP.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// LookupIn is lookup's argument.
type LookupIn struct {
	Key string `json:"key" jsonschema:"the key to look up"`
}

// Empty is the argument of the tools that take none.
type Empty struct{}

// NewServer returns the server; exit is how crash ends it.
func NewServer(exit func(int)) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "fake-mcp", Version: "1.0"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "lookup", Description: "Look a key up in the test's records."},
		func(_ context.Context, _ *sdk.CallToolRequest, in LookupIn) (*sdk.CallToolResult, any, error) {
			text := fmt.Sprintf("record %s: shelf %d (tag %s)", in.Key, len(in.Key)*7, os.Getenv("FAKE_MCP_TAG"))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."},
		func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
			select {} // not even cancellation ends it
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Ends the server."},
		func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "fake-mcp: crashing as asked")
			exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Answers 200 KB."},
		func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 200<<10)}}}, nil, nil
		})
	return s
}

// Handler serves the server over streamable HTTP; requests without the
// header want are refused with 401.
func Handler(wantHeader, wantValue string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return NewServer(func(int) {}) }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantHeader != "" && r.Header.Get(wantHeader) != wantValue {
			http.Error(w, "missing token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
