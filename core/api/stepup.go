package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/webtools"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Step-up beyond the fixed list of routes (requireStepUp): a web session
// past its window changes nothing in Settings that makes an agent ask
// less, reach more or write elsewhere, and nothing that sends a stored
// secret somewhere new. The checks here keep it from doing the same by
// another road: a task's own grants, and the settings and names that say
// where a stored secret goes. Each check costs nothing for an API key or
// the unix socket, which never need step-up.

// stepUpForTask asks a stale web session for a fresh sign-in when a task
// would get more than Settings give every task (loosening says what).
func (a *API) stepUpForTask(r *http.Request, in wire.CreateTask) error {
	if !stale(r) {
		return nil
	}
	what, err := a.loosening(r.Context(), in)
	if err != nil || what == "" {
		return err
	}
	return requireStepUp(r, what)
}

// stepUpForTaskOf is stepUpForTask for a stored task's configuration (a
// rerun grants it again, a preset made from it grants it to every task it
// launches). A task that cannot be read needs nothing here: the action
// says what is wrong with it.
func (a *API) stepUpForTaskOf(r *http.Request, id string) error {
	if !stale(r) {
		return nil
	}
	in, err := a.o.TaskConfig(r.Context(), id)
	if err != nil {
		return nil
	}
	return a.stepUpForTask(r, in)
}

// loosening says what of a task's configuration goes past what Settings
// give every task ("" for nothing), in the words of the refusal:
//   - folders of this computer (the agent reads what they hold);
//   - hosts past the egress policy (as egressAllowHosts);
//   - a tool policy that asks less than Settings' about any tool;
//   - the internet while Settings say offline;
//   - an output folder outside Settings' (real paths compared: a link
//     under Settings' folder that leads elsewhere is elsewhere);
//   - setup or check commands, which run in the VM without asking, while
//     Settings' policy does not allow run_shell.
func (a *API) loosening(ctx context.Context, in wire.CreateTask) (string, error) {
	s := a.cfg.Settings()
	if len(in.HostFolders) > 0 {
		return "Giving a task folders of this computer", nil
	}
	if len(in.AllowHosts) > 0 {
		return "Letting a task reach hosts past the egress policy", nil
	}
	if config.NetworkMode(in.NetworkMode) == config.NetworkInternet && s.NetworkMode != config.NetworkInternet {
		return "Giving a task the internet while Settings keep tasks offline", nil
	}
	if len(in.ToolPolicy) > 0 {
		task := make(config.ToolPolicy, len(in.ToolPolicy))
		for tool, perm := range in.ToolPolicy {
			task[tool] = config.Permission(perm)
		}
		fallback, err := a.mcpPermissions(ctx)
		if err != nil {
			return "", err
		}
		if tools := s.ToolPolicy.Looser(task, fallback); len(tools) > 0 {
			return fmt.Sprintf("Giving a task a tool policy that asks less than Settings' (%s)", strings.Join(tools, ", ")), nil
		}
	}
	if in.OutputDirectory != "" {
		// An output folder the task cannot have is refused when it is
		// submitted; nothing to ask here.
		if dir, err := a.o.OutputDir(in.OutputDirectory); err == nil && !within(realPath(dir), realPath(s.OutputDirectory)) {
			return fmt.Sprintf("Saving a task's files to %s, outside Settings' output folder (%s),", dir, s.OutputDirectory), nil
		}
	}
	commands := in.SetupCommand != "" || in.CheckCommand != "" || in.Provisioning != nil && len(in.Provisioning.SetupCommands) > 0
	if commands && s.ToolPolicy.For("run_shell") != config.Allow {
		return "Giving a task setup or check commands (they run in its VM without asking, and Settings ask before run_shell)", nil
	}
	return "", nil
}

// mcpPermissions is the fallback of config.ToolPolicy.Looser for MCP
// tools: their server's permission, or ask (the default of a new server)
// for a server that does not exist.
func (a *API) mcpPermissions(ctx context.Context) (func(string) (config.Permission, bool), error) {
	servers, err := a.st.ListMCPServers(ctx)
	if err != nil {
		return nil, err
	}
	perms := map[string]config.Permission{}
	for _, m := range servers {
		perms[m.Name] = config.Permission(m.Permission)
	}
	return func(tool string) (config.Permission, bool) {
		rest, ok := strings.CutPrefix(tool, config.MCPToolPrefix)
		if !ok {
			return "", false
		}
		server, _, _ := strings.Cut(rest, "__")
		if perm, ok := perms[server]; ok && perm.Valid() {
			return perm, true
		}
		return config.Ask, true
	}, nil
}

// realPath is where p leads today: the links of its longest existing part
// resolved, the rest as it is. A dangling link on the way leads nowhere
// known ("").
func realPath(p string) string {
	rest := ""
	for dir := filepath.Clean(p); ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if _, err := os.Lstat(dir); err == nil {
			return "" // it exists, yet does not resolve
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Clean(p)
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within says whether dir is parent or inside it (both real paths; ""
// is nowhere).
func within(dir, parent string) bool {
	if dir == "" || parent == "" {
		return false
	}
	rel, err := filepath.Rel(parent, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// stepUpForSearch asks a stale web session for a fresh sign-in when a
// settings change would send the stored search API key to an address it
// was not sent to (a new webSearchURL, or the Brave backend turned on).
// Turning search off, or changing it while no key is stored, needs
// nothing.
func (a *API) stepUpForSearch(r *http.Request, now, next config.Settings) error {
	if !stale(r) {
		return nil
	}
	key, _ := a.cfg.Secrets.Get(orchestrator.WebSearchKeyRef)
	before := webtools.Search{Backend: now.WebSearchBackend, URL: now.WebSearchURL, APIKey: key}.KeyURL()
	after := webtools.Search{Backend: next.WebSearchBackend, URL: next.WebSearchURL, APIKey: key}.KeyURL()
	if after == "" || after == before {
		return nil
	}
	return requireStepUp(r, "Sending the stored search API key to "+after)
}

// provisioningScopes are the templates (by id or name) the provisioning
// configuration scopes variables, files and commands to.
func provisioningScopes(c wire.Provisioning) []string {
	var out []string
	for _, v := range c.EnvironmentVariables {
		out = append(out, v.Template)
	}
	for _, f := range c.InjectedFiles {
		out = append(out, f.Template)
	}
	for _, s := range c.SetupCommands {
		out = append(out, s.Template)
	}
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// stepUpForTemplate asks a stale web session for a fresh sign-in when a
// template would take over provisioning scoped to another: what is scoped
// to a template's id or name (secret variables, files of this computer,
// setup commands) goes to the VMs of whichever template holds that id or
// name. Renaming a template (id; name its new name) to a scope takes it;
// creating one (id "") may take a scope no template holds any more (its
// template deleted or renamed), since a new template's id and name come
// from its manifest.
func (a *API) stepUpForTemplate(r *http.Request, id, name string) error {
	if !stale(r) || a.cfg.Provisioning == nil {
		return nil
	}
	c, err := a.cfg.Provisioning.Get()
	if err != nil {
		return err
	}
	scopes := provisioningScopes(c)
	if len(scopes) == 0 {
		return nil
	}
	ts, err := a.st.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	if id != "" {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(ts, func(t store.Template) bool { return t.ID == id })
		if i < 0 || ts[i].Name == name || ts[i].ID == name || !slices.Contains(scopes, name) {
			return nil
		}
		return requireStepUp(r, fmt.Sprintf("Naming a template %q, which the VM provisioning is scoped to,", name))
	}
	held := map[string]bool{}
	for _, t := range ts {
		held[t.ID], held[t.Name] = true, true
	}
	orphans := slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return held[s] })
	if len(orphans) == 0 {
		return nil
	}
	slices.Sort(orphans)
	return requireStepUp(r, fmt.Sprintf("Creating a template while the VM provisioning is scoped to a template that no longer exists (%s)",
		strings.Join(slices.Compact(orphans), ", ")))
}

// sameGrants reports whether two task configurations grant the same:
// what loosening weighs.
func sameGrants(a, b wire.CreateTask) bool {
	return a.OutputDirectory == b.OutputDirectory && a.NetworkMode == b.NetworkMode && maps.Equal(a.ToolPolicy, b.ToolPolicy) &&
		slices.Equal(a.HostFolders, b.HostFolders) && slices.Equal(a.AllowHosts, b.AllowHosts) &&
		a.SetupCommand == b.SetupCommand && a.CheckCommand == b.CheckCommand && reflect.DeepEqual(setupsOf(a), setupsOf(b))
}

// setupsOf is a task configuration's own setup commands.
func setupsOf(in wire.CreateTask) []wire.SetupCommand {
	if in.Provisioning == nil {
		return nil
	}
	return in.Provisioning.SetupCommands
}
