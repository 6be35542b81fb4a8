package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/mcp"
	"github.com/hivecrew/hivecrew/core/skills"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/webtools"
)

// extras are a task's host tools (issue 19) and what its prompt says of
// them.
type extras struct {
	tools    []agent.HostTool
	prompt   []string
	context  string
	children agent.Children
	close    func()
}

// WebSearchKeyRef names the search API's key in the secret store.
const WebSearchKeyRef = "websearch/apikey"

// extrasFor makes a task's host tools: its MCP servers' (connected for it
// alone), web search and reading (internet-mode tasks only), skills, and
// spawn_subagent. What cannot be had is said in the task's activity, and
// the task goes on without it.
func (o *Orchestrator) extrasFor(ctx context.Context, r *run, t store.Task, network vm.NetworkMode, settings config.Settings) extras {
	x := extras{close: func() {}}
	policy := settings.ToolPolicy.Merge(toPolicy(t.ToolPolicy))
	denied := func(name string) bool {
		p, ok := policy.Lookup(name)
		return ok && p == config.Deny
	}

	// MCP servers.
	if servers := o.mcpServers(ctx, r); len(servers) > 0 {
		sess, problems := mcp.Connect(ctx, servers)
		x.close = sess.Close
		for _, p := range problems {
			o.emitInfo(r, p.Error()+"; its tools are not offered to this task")
		}
		x.tools = append(x.tools, sess.Tools()...)
	}

	// Web tools, for a task that may reach the internet: an offline task's
	// agent gets none, so it stays offline.
	if network == vm.NetworkInternet && !(denied(config.WebSearch) && denied(config.ReadWebpage)) {
		allow, err := config.ResolveAllow(append(append([]string{}, settings.EgressAllowHosts...), t.AllowHosts...))
		if err != nil {
			o.emitInfo(r, "The web tools' allowlist: "+err.Error()+"; read_webpage reaches public addresses only")
			allow = nil
		}
		search := webtools.Search{Backend: settings.WebSearchBackend, URL: settings.WebSearchURL}
		if search.Backend == "brave" {
			key, err := o.secret(WebSearchKeyRef)
			if key == "" {
				o.emitInfo(r, fmt.Sprintf("web_search is not offered: the Brave Search API key is not stored (%v); set it in Settings › Web search", err))
				search.Backend = ""
			}
			search.APIKey = key
		}
		x.tools = append(x.tools, webtools.Tools(search, allow)...)
	}

	// Skills.
	lib := skills.Library{Dir: o.cfg.Paths.Skills()}
	all, problems := lib.List()
	for _, p := range problems {
		o.emitInfo(r, "A skill in the library cannot be used: "+p.Error())
	}
	var enabled []skills.Skill
	for _, s := range all {
		if s.Enabled {
			enabled = append(enabled, s)
		}
	}
	mentioned := append(append([]string{}, t.SkillNames...), skills.Mentioned(t.Description, enabled)...)
	for _, name := range t.SkillNames {
		if !slices.ContainsFunc(enabled, func(s skills.Skill) bool { return s.Name == name }) {
			o.emitInfo(r, fmt.Sprintf("The task mentions the skill %s, which is not in the library (or is turned off): the agent works without it", name))
		}
	}
	if !denied(config.UseSkill) {
		prompt, first, tools := skills.ForTask(enabled, mentioned, r.sharedDir)
		x.prompt, x.context, x.tools = append(x.prompt, prompt...), first, append(x.tools, tools...)
	}

	// Subagents.
	if !denied(config.SpawnSubagent) && t.SubagentDepth < MaxSubagentDepth {
		kids := &children{o: o, parent: r, task: t}
		x.children = kids
		x.tools = append(x.tools, kids.tools()...)
		where := "domain host for research on the host (web, MCP tools, skills; no VM, it starts at once) or domain vm for work in a VM of its own"
		if r.host {
			where = "domain host only: research on the host"
		}
		x.prompt = append(x.prompt, fmt.Sprintf("Subagents: spawn_subagent starts a helper agent on a part of the task, %s (at most %d for this task); it works while you go on, and its result reaches you when it ends. "+
			"list_subagents, get_subagent_status, await_subagents, cancel_subagent and send_message follow and steer them.", where, MaxSubagents))
	}
	return x
}

// secret reads the secret store ("" without one).
func (o *Orchestrator) secret(ref string) (string, error) {
	if o.cfg.Secret == nil {
		return "", fmt.Errorf("no secret store")
	}
	return o.cfg.Secret(ref)
}

// mcpServers are the enabled MCP servers, with their secret values.
func (o *Orchestrator) mcpServers(ctx context.Context, r *run) []mcp.Server {
	rows, err := o.cfg.Store.ListMCPServers(ctx)
	if err != nil {
		o.emitInfo(r, "Could not read the MCP servers: "+err.Error())
		return nil
	}
	var out []mcp.Server
	for _, m := range rows {
		if !m.Enabled {
			continue
		}
		var secret string
		if len(m.EnvNames)+len(m.HeaderNames) > 0 {
			if secret, err = o.secret(m.SecretRef()); err != nil || secret == "" {
				o.emitInfo(r, fmt.Sprintf("MCP server %s: its environment and headers are not in the secret store (%v); its tools are not offered to this task", m.Name, err))
				continue
			}
		}
		s, err := mcp.FromStore(m, secret)
		if err != nil {
			o.emitInfo(r, err.Error())
			continue
		}
		out = append(out, s)
	}
	return out
}

// skillNames cleans the skill names a new task mentions. As the Swift
// server does, a name not in the library does not refuse the task: the
// task's activity says so when it starts, and the agent gets the others.
func skillNames(names []string) ([]string, error) {
	if len(names) > 32 {
		return nil, errdefs.Invalidf("mentionedSkillNames: at most 32 (got %d)", len(names))
	}
	var out []string
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "@")
		if n == "" || slices.Contains(out, n) {
			continue
		}
		if len(n) > 64 {
			return nil, errdefs.Invalidf("mentionedSkillNames: %.64q… is not a skill name", n)
		}
		out = append(out, n)
	}
	return out, nil
}
