package config

import (
	"maps"
	"slices"
)

// rank orders permissions from the tightest: deny, ask, allow.
func (p Permission) rank() int {
	switch p {
	case Allow:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// Looser names the tools that task, a task's own policy over p (as
// Merge applies it), lets the agent use with less asking than p does:
// allow where p asks or denies, ask where p denies. Every name a policy
// may hold is weighed, open_terminal too (it follows run_shell unless
// named). fallback is a tool's permission where neither policy names it
// and it has a default of its own (an MCP server's tools take their
// server's); without one the tool's default is For's. A nil or empty
// answer: the task asks at least as often as p.
func (p ToolPolicy) Looser(task ToolPolicy, fallback func(tool string) (Permission, bool)) []string {
	if len(task) == 0 {
		return nil
	}
	merged := p.Merge(task)
	perm := func(policy ToolPolicy, tool string) Permission {
		if perm, ok := policy.Lookup(tool); ok {
			return perm
		}
		if fallback != nil {
			if perm, ok := fallback(tool); ok {
				return perm
			}
		}
		return policy.For(tool)
	}
	names := PolicyNames()
	for tool := range maps.Keys(task) {
		if !slices.Contains(names, tool) {
			names = append(names, tool)
		}
	}
	slices.Sort(names)
	var out []string
	for _, tool := range names {
		if perm(merged, tool).rank() > perm(p, tool).rank() {
			out = append(out, tool)
		}
	}
	return out
}
