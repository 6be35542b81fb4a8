package main

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/mcpserve"
	"github.com/hivecrew/hivecrew/core/version"
)

// mcpServe: hivecrew mcp serve — Hivecrew's tools (core/mcpserve) for the
// agent that started this process, over MCP's stdio transport, through
// the CLI's own client (the helper's unix socket; the helper is started
// when none answers). Stdout carries the protocol alone: anything else
// goes to stderr.
func mcpServe(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	srv, err := mcpserve.New(mcpserve.Config{
		Helper:  func(*mcp.RequestExtra) (mcpserve.Helper, error) { return c, nil },
		Version: version.Version,
	})
	if err != nil {
		return err
	}
	if err := srv.Run(e.ctx, &mcp.StdioTransport{}); err != nil && e.ctx.Err() == nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	return nil
}
