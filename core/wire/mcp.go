package wire

import (
	"time"
)

// MCPServer is an MCP server the agents may use (extension). The values
// of its environment variables and headers are never sent: their names are.
type MCPServer struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Command        string    `json:"command,omitempty"`
	Args           []string  `json:"args"`
	URL            string    `json:"url,omitempty"`
	EnvNames       []string  `json:"envNames"`
	HeaderNames    []string  `json:"headerNames"`
	Permission     string    `json:"permission"`
	TimeoutSeconds int       `json:"timeoutSeconds"`
	Enabled        bool      `json:"enabled"`
	CreatedAt      time.Time `json:"createdAt"`
}

// MCPServerList is the answer of GET /mcp-servers.
type MCPServerList struct {
	Servers []MCPServer `json:"servers"`
}

// MCPServerInput is the body of POST /mcp-servers. Env and Headers values
// are write-only.
type MCPServerInput struct {
	Name           string            `json:"name"`
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	URL            string            `json:"url,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Permission     string            `json:"permission,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty"`
	Enabled        *bool             `json:"enabled,omitempty"`
}

// MCPServerPatch is the body of PATCH /mcp-servers/:id: each field given
// replaces the stored one. Env and Headers, when given, are the whole
// set: a value sets a name, null keeps its stored value, a name left out
// goes. Values are write-only.
type MCPServerPatch struct {
	Command        *string            `json:"command,omitempty"`
	Args           *[]string          `json:"args,omitempty"`
	URL            *string            `json:"url,omitempty"`
	Env            map[string]*string `json:"env"`
	Headers        map[string]*string `json:"headers"`
	Permission     *string            `json:"permission,omitempty"`
	TimeoutSeconds *int               `json:"timeoutSeconds,omitempty"`
	Enabled        *bool              `json:"enabled,omitempty"`
}

// MCPServerCheck is the answer of POST /mcp-servers/:id/check: the tools
// it offers, or why it cannot be used.
type MCPServerCheck struct {
	OK    bool     `json:"ok"`
	Tools []string `json:"tools"`
	Error string   `json:"error,omitempty"`
}
