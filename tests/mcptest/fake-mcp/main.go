// Command fake-mcp is mcptest's server over stdio, for tests.
package main

import (
	"context"
	"log"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/tests/mcptest"
)

func main() {
	if err := mcptest.NewServer(os.Exit).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
