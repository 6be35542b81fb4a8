package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdMCP: hivecrew mcp add|edit|ls|check|on|off|rm — the MCP servers whose tools
// the agent is offered (as mcp__SERVER__TOOL) — and mcp serve, Hivecrew as
// an MCP server for other agents.
func cmdMCP(e *env, args []string) error {
	return runTable(e, "mcp", []command{
		{"add", "--name N (--url URL | -- COMMAND [ARG]...) [--env NAME=VALUE]... [--header NAME=VALUE]... [--permission P] [--timeout S] [--off]", "add an MCP server", mcpAdd},
		{"ls", "", "list the MCP servers (never their secret values)", mcpLs},
		{"edit", "NAME|ID [--url URL | -- COMMAND [ARG]...] [--env NAME=VALUE]... [--unset-env NAME]... [--header NAME=VALUE]... [--unset-header NAME]... [--permission P] [--timeout S]", "change a server (values not given stay)", mcpEdit},
		{"check", "NAME|ID", "start a server as a task would and list its tools", mcpCheck},
		{"on", "NAME|ID", "offer a server's tools to new tasks", mcpSwitch(true)},
		{"off", "NAME|ID", "stop offering a server's tools", mcpSwitch(false)},
		{"rm", "NAME|ID", "remove a server and its secrets", remover((*client.Client).RemoveMCPServer, "Removed MCP server %s.")},
		{"serve", "", "be an MCP server on stdin/stdout: other agents (Claude Code, Codex, Cursor) run and follow tasks", mcpServe},
	}, args)
}

func mcpAdd(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "the server's `NAME` (a-z, 0-9, -; its tools are mcp__NAME__TOOL) (required)")
	url := fs.String("url", "", "a streamable HTTP server's `URL` (instead of a command after --)")
	var env, headers listFlag
	fs.Var(&env, "env", "set `NAME=VALUE` in the server's environment (repeatable; VALUE \"-\" reads it from stdin; values are kept as secrets)")
	fs.Var(&headers, "header", "send the HTTP header `NAME=VALUE` (repeatable; VALUE \"-\" reads it from stdin; kept as a secret)")
	permission := fs.String("permission", "", "what its tools may do without asking: allow, ask (default) or deny (`P`)")
	timeout := fs.Int("timeout", 0, "longest a tool call may take, in `SECONDS` (default 60)")
	off := fs.Bool("off", false, "add it turned off")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" {
		return e.bad(fs, "mcp add needs --name")
	}
	if (*url == "") == (len(pos) == 0) {
		return e.bad(fs, "mcp add needs --url URL or a command after --, not both")
	}
	in := wire.MCPServerInput{Name: *name, URL: *url, Permission: *permission, TimeoutSeconds: *timeout}
	if len(pos) > 0 {
		in.Command, in.Args = pos[0], pos[1:]
	}
	if *off {
		in.Enabled = new(bool)
	}
	stdin := lazyLine{r: e.stdin()}
	if in.Env, err = pairs(fs, e, "env", env, &stdin); err != nil {
		return err
	}
	if in.Headers, err = pairs(fs, e, "header", headers, &stdin); err != nil {
		return err
	}
	return send(e, func(c *client.Client) (wire.MCPServer, error) {
		return c.AddMCPServer(e.ctx, in)
	}, func(m wire.MCPServer) {
		e.out("Added MCP server %s; check it with: hivecrew mcp check %s", m.Name, m.Name)
	})
}

// lazyLine reads one line of stdin the first time a value is "-" (only one
// value may be).
type lazyLine struct {
	r    io.Reader
	used bool
}

func (l *lazyLine) read(what string) (string, error) {
	if l.used {
		return "", fmt.Errorf("only one value can be read from stdin; %s is a second", what)
	}
	l.used = true
	line, err := bufio.NewReader(l.r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read %s from stdin: %w", what, err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// pairs turns repeated --flag NAME=VALUE into a map.
func pairs(fs *flag.FlagSet, e *env, flagName string, list []string, stdin *lazyLine) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, e.bad(fs, "--%s takes NAME=VALUE, not %q", flagName, kv)
		}
		if _, dup := out[k]; dup {
			return nil, e.bad(fs, "--%s %s is given twice", flagName, k)
		}
		if v == "-" {
			var err error
			if v, err = stdin.read(k); err != nil {
				return nil, err
			}
		}
		out[k] = v
	}
	return out, nil
}

func mcpLs(e *env, args []string) error {
	return listing[wire.MCPServerList, wire.MCPServer]{
		get: func(c *client.Client, ctx context.Context) (wire.MCPServerList, error) {
			ms, err := c.MCPServers(ctx)
			return wire.MCPServerList{Servers: nonNil(ms)}, err
		},
		items:  func(l wire.MCPServerList) []wire.MCPServer { return l.Servers },
		none:   "No MCP servers yet: hivecrew mcp add --name NAME -- COMMAND [ARG]...",
		header: []string{"NAME", "ON", "PERMISSION", "TIMEOUT", "RUNS", "SECRETS"},
		cells: func(m wire.MCPServer) []string {
			runs := m.URL
			if runs == "" {
				runs = strings.Join(append([]string{m.Command}, m.Args...), " ")
			}
			secrets := append(append([]string{}, m.EnvNames...), m.HeaderNames...)
			return []string{m.Name, onOff(m.Enabled), m.Permission, fmt.Sprintf("%ds", m.TimeoutSeconds), clip(oneLine(runs), 60), or(strings.Join(secrets, ", "), "-")}
		},
	}.run(e, args)
}

func mcpCheck(e *env, args []string) error {
	return probe(e, args, (*client.Client).CheckMCPServer, func(name string, r wire.MCPServerCheck) {
		if r.OK {
			e.out("%s works: %d tool(s)", name, len(r.Tools))
			for _, t := range r.Tools {
				e.out("  %s", t)
			}
		}
	}, func(name string, r wire.MCPServerCheck) error { return doesNotWork(name, r.OK, r.Error) })
}

// mcpSwitch is mcp on (on) or off.
func mcpSwitch(on bool) func(e *env, args []string) error {
	return switcher((*client.Client).SetMCPServerEnabled, func(e *env, m wire.MCPServer, on bool) {
		if on {
			e.out("New tasks are offered %s's tools.", m.Name)
		} else {
			e.out("New tasks are not offered %s's tools.", m.Name)
		}
	})(on)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func mcpEdit(e *env, args []string) error {
	fs := e.flags()
	url := fs.String("url", "", "run it as a streamable HTTP server at `URL` (instead of its command)")
	var env, headers, unsetEnv, unsetHeaders listFlag
	fs.Var(&env, "env", "set `NAME=VALUE` in its environment (repeatable; VALUE \"-\" reads it from stdin)")
	fs.Var(&unsetEnv, "unset-env", "remove the variable `NAME` (repeatable)")
	fs.Var(&headers, "header", "send the HTTP header `NAME=VALUE` (repeatable; VALUE \"-\" reads it from stdin)")
	fs.Var(&unsetHeaders, "unset-header", "stop sending the header `NAME` (repeatable)")
	permission := fs.String("permission", "", "what its tools may do without asking: allow, ask or deny (`P`)")
	timeout := fs.Int("timeout", 0, "longest a tool call may take, in `SECONDS`")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return e.bad(fs, "mcp edit needs the server's NAME or ID")
	}
	if *url != "" && len(pos) > 1 {
		return e.bad(fs, "give --url or a command after --, not both")
	}
	var p wire.MCPServerPatch
	switch {
	case *url != "":
		p.URL, p.Command, p.Args = url, new(string), &[]string{}
	case len(pos) > 1:
		cmdArgs := pos[2:]
		p.Command, p.Args, p.URL = &pos[1], &cmdArgs, new(string)
	}
	if *permission != "" {
		p.Permission = permission
	}
	if *timeout != 0 {
		p.TimeoutSeconds = timeout
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	stdin := lazyLine{r: e.stdin()}
	if len(env)+len(unsetEnv)+len(headers)+len(unsetHeaders) > 0 {
		old, err := findMCPServer(e, c, pos[0])
		if err != nil {
			return err
		}
		if p.Env, err = editPairs(fs, e, "env", old.EnvNames, env, unsetEnv, &stdin); err != nil {
			return err
		}
		if p.Headers, err = editPairs(fs, e, "header", old.HeaderNames, headers, unsetHeaders, &stdin); err != nil {
			return err
		}
	}
	m, err := c.EditMCPServer(e.ctx, pos[0], p)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(m)
	}
	e.out("Changed MCP server %s; check it with: hivecrew mcp check %s", m.Name, m.Name)
	return nil
}

// findMCPServer is the server named or numbered nameOrID.
func findMCPServer(e *env, c *client.Client, nameOrID string) (wire.MCPServer, error) {
	ms, err := c.MCPServers(e.ctx)
	if err != nil {
		return wire.MCPServer{}, err
	}
	for _, m := range ms {
		if m.Name == nameOrID || m.ID == nameOrID {
			return m, nil
		}
	}
	return wire.MCPServer{}, errdefs.NotFoundf("MCP server %q not found", nameOrID)
}

// editPairs is the whole set of an edited server's variables or headers:
// the stored names kept (null), --flag NAME=VALUE set, --unset-flag NAME
// removed; nil when neither flag is given.
func editPairs(fs *flag.FlagSet, e *env, flagName string, stored, set, unset []string, stdin *lazyLine) (map[string]*string, error) {
	if len(set)+len(unset) == 0 {
		return nil, nil
	}
	values, err := pairs(fs, e, flagName, set, stdin)
	if err != nil {
		return nil, err
	}
	out := map[string]*string{}
	for _, k := range stored {
		out[k] = nil
	}
	for k, v := range values {
		out[k] = &v
	}
	for _, k := range unset {
		if _, ok := out[k]; !ok {
			return nil, e.bad(fs, "--unset-%s %s: the server has no such %s", flagName, k, flagName)
		}
		delete(out, k)
	}
	return out, nil
}
