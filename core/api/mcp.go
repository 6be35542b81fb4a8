package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/mcp"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// MCP servers (issue 19.2, extension). Adding one lets the helper run a
// program of the user's choosing, so it needs what adding a credential
// needs: an API key, or a web session that signed in a moment ago. The
// values of its environment variables and headers (tokens, mostly) go to
// the secret store and are never answered.

func mcpServerJSON(m store.MCPServer) wire.MCPServer {
	return wire.MCPServer{ID: m.ID, Name: m.Name, Command: m.Command, Args: nonNil(m.Args), URL: m.URL,
		EnvNames: nonNil(m.EnvNames), HeaderNames: nonNil(m.HeaderNames),
		Permission: m.Permission, TimeoutSeconds: m.TimeoutSeconds, Enabled: m.Enabled, CreatedAt: ts(m.CreatedAt)}
}

func (a *API) listMCPServers(w http.ResponseWriter, r *http.Request) error {
	ms, err := a.st.ListMCPServers(r.Context())
	if err != nil {
		return err
	}
	out := wire.MCPServerList{Servers: make([]wire.MCPServer, len(ms))}
	for i, m := range ms {
		out.Servers[i] = mcpServerJSON(m)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) createMCPServer(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Adding an MCP server"); err != nil {
		return err
	}
	var in wire.MCPServerInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	srv := mcp.Server{Name: in.Name, Command: in.Command, Args: in.Args, URL: in.URL, Env: in.Env, Headers: in.Headers,
		Permission: config.Permission(cmp.Or(in.Permission, string(config.Ask)))}
	if err := srv.Check(); err != nil {
		return errdefs.Invalidf("%v", err)
	}
	if in.TimeoutSeconds < 0 || in.TimeoutSeconds > 3600 {
		return errdefs.Invalidf("timeoutSeconds must be between 1 and 3600 (0: %d)", int(mcp.DefaultTimeout.Seconds()))
	}
	m := store.MCPServer{Name: in.Name, Command: in.Command, Args: in.Args, URL: in.URL,
		EnvNames: slices.Sorted(maps.Keys(in.Env)), HeaderNames: slices.Sorted(maps.Keys(in.Headers)),
		Permission: string(srv.Permission), TimeoutSeconds: cmp.Or(in.TimeoutSeconds, int(mcp.DefaultTimeout.Seconds())),
		Enabled: in.Enabled == nil || *in.Enabled}
	if err := a.st.CreateMCPServer(r.Context(), &m); err != nil {
		return err
	}
	if len(in.Env)+len(in.Headers) > 0 {
		b, _ := json.Marshal(mcp.Stored{Env: in.Env, Headers: in.Headers})
		if err := a.cfg.Secrets.Set(m.SecretRef(), string(b)); err != nil {
			// No half-made server: without its secrets it goes.
			a.st.DeleteMCPServer(r.Context(), m.ID)
			return errdefs.Unavailablef("store the MCP server's environment and headers: %v", err)
		}
	}
	return writeJSON(w, http.StatusCreated, mcpServerJSON(m))
}

// updateMCPServer changes an MCP server: each field given replaces the
// stored one. env and headers, when given, are the whole set: a name with
// a value sets it, a name with null keeps its stored value, a name left
// out goes. Anything but turning it off needs step-up: the server is a
// program the helper runs, or an address it sends tokens to.
func (a *API) updateMCPServer(w http.ResponseWriter, r *http.Request) error {
	var in wire.MCPServerPatch
	if err := decode(w, r, &in); err != nil {
		return err
	}
	onlySwitch := in.Command == nil && in.Args == nil && in.URL == nil && in.Env == nil && in.Headers == nil &&
		in.Permission == nil && in.TimeoutSeconds == nil
	if onlySwitch && in.Enabled == nil {
		return errdefs.Invalidf("nothing to change: give command, args, url, env, headers, permission, timeoutSeconds or enabled")
	}
	if !onlySwitch || *in.Enabled {
		if err := requireStepUp(r, "Changing an MCP server"); err != nil {
			return err
		}
	}
	old, err := a.st.FindMCPServer(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	secret, _ := a.cfg.Secrets.Get(old.SecretRef())
	srv, err := mcp.FromStore(old, secret)
	if err != nil {
		return errdefs.Invalidf("%v: remove the server and add it again", err)
	}
	m := old
	m.Command, m.URL = deref(in.Command, m.Command), deref(in.URL, m.URL)
	m.Args = deref(in.Args, m.Args)
	m.Permission, m.TimeoutSeconds = deref(in.Permission, m.Permission), deref(in.TimeoutSeconds, m.TimeoutSeconds)
	m.Enabled = deref(in.Enabled, m.Enabled)
	env, err := mergeSecrets("env", srv.Env, in.Env)
	if err != nil {
		return err
	}
	headers, err := mergeSecrets("headers", srv.Headers, in.Headers)
	if err != nil {
		return err
	}
	next := mcp.Server{Name: m.Name, Command: m.Command, Args: m.Args, URL: m.URL, Env: env, Headers: headers, Permission: config.Permission(m.Permission)}
	if err := next.Check(); err != nil {
		return errdefs.Invalidf("%v", err)
	}
	if m.TimeoutSeconds < 1 || m.TimeoutSeconds > 3600 {
		return errdefs.Invalidf("timeoutSeconds must be between 1 and 3600")
	}
	m.EnvNames, m.HeaderNames = slices.Sorted(maps.Keys(env)), slices.Sorted(maps.Keys(headers))
	if err := a.st.UpdateMCPServer(r.Context(), m); err != nil {
		return err
	}
	if in.Env != nil || in.Headers != nil {
		err := a.cfg.Secrets.Delete(m.SecretRef())
		if len(env)+len(headers) > 0 {
			b, _ := json.Marshal(mcp.Stored{Env: env, Headers: headers})
			err = a.cfg.Secrets.Set(m.SecretRef(), string(b))
		}
		if err != nil {
			a.st.UpdateMCPServer(context.WithoutCancel(r.Context()), old)
			return errdefs.Unavailablef("store the MCP server's environment and headers: %v", err)
		}
	}
	return writeJSON(w, http.StatusOK, mcpServerJSON(m))
}

// mergeSecrets is an edit's env or headers over the stored ones (see
// updateMCPServer); nil leaves them as they are.
func mergeSecrets(field string, stored map[string]string, given map[string]*string) (map[string]string, error) {
	if given == nil {
		return stored, nil
	}
	out := make(map[string]string, len(given))
	for k, v := range given {
		if v != nil {
			out[k] = *v
			continue
		}
		old, ok := stored[k]
		if !ok {
			return nil, errdefs.Invalidf("%s %s: null keeps a stored value, and it has none: give its value", field, k)
		}
		out[k] = old
	}
	return out, nil
}

// decodeSwitch reads a PATCH that turns something on or off
// ({"enabled": bool}, nothing else). Turning it on needs step-up: what is
// on acts for tasks (a server's tools, a webhook's deliveries).
func decodeSwitch(w http.ResponseWriter, r *http.Request, what, short string) (bool, error) {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decode(w, r, &in); err != nil {
		return false, err
	}
	if in.Enabled == nil {
		return false, errdefs.Invalidf("give enabled: true or false (to change anything else, remove the %s and add it again)", short)
	}
	if *in.Enabled {
		if err := requireStepUp(r, "Turning "+what+" on"); err != nil {
			return false, err
		}
	}
	return *in.Enabled, nil
}

func (a *API) deleteMCPServer(w http.ResponseWriter, r *http.Request) error {
	m, err := a.st.DeleteMCPServer(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	a.cfg.Secrets.Delete(m.SecretRef())
	// Its tools' permissions go with it: a server added later under the
	// same name starts from its own permission, not from a policy line
	// nobody sees any more.
	policy := a.cfg.Settings().ToolPolicy
	kept := maps.Clone(policy)
	maps.DeleteFunc(kept, func(tool string, _ config.Permission) bool {
		return strings.HasPrefix(tool, config.MCPToolPrefix+m.Name+"__")
	})
	if len(kept) != len(policy) {
		b, _ := json.Marshal(map[string]config.ToolPolicy{"toolPolicy": kept})
		if _, err := a.cfg.SaveSettings(r.Context(), b); err != nil {
			return fmt.Errorf("removed MCP server %s, but not its tools' permissions: %w", m.Name, err)
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkMCPServer connects to a server as a task would and lists its tools.
func (a *API) checkMCPServer(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Starting an MCP server"); err != nil {
		return err
	}
	m, err := a.st.FindMCPServer(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	secret, _ := a.cfg.Secrets.Get(m.SecretRef())
	srv, err := mcp.FromStore(m, secret)
	if err != nil {
		return writeJSON(w, http.StatusOK, wire.MCPServerCheck{Tools: []string{}, Error: err.Error()})
	}
	sess, problems := mcp.Connect(context.WithoutCancel(r.Context()), []mcp.Server{srv})
	defer sess.Close()
	if len(problems) > 0 {
		return writeJSON(w, http.StatusOK, wire.MCPServerCheck{Tools: []string{}, Error: problems[0].Error()})
	}
	return writeJSON(w, http.StatusOK, wire.MCPServerCheck{OK: true, Tools: nonNil(sess.ToolNames())})
}
