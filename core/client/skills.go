package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Skills lists the skill library.
func (c *Client) Skills(ctx context.Context) (wire.SkillList, error) {
	var l wire.SkillList
	return l, c.call(ctx, http.MethodGet, "/api/v1/skills", nil, &l)
}

// Skill is one skill of the library, with its instructions.
func (c *Client) Skill(ctx context.Context, name string) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodGet, "/api/v1/skills/"+esc(name), nil, &out)
}

// SetSkillEnabled turns a skill on or off (off: the agent is not told of it).
func (c *Client) SetSkillEnabled(ctx context.Context, name string, on bool) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodPatch, "/api/v1/skills/"+esc(name), map[string]bool{"isEnabled": on}, &out)
}

// SaveSkill adds a skill to the library.
func (c *Client) SaveSkill(ctx context.Context, s wire.Skill) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodPost, "/api/v1/skills", s, &out)
}

// ImportSkills imports a skill folder or a git repository's skills.
func (c *Client) ImportSkills(ctx context.Context, in wire.SkillImport) (wire.SkillList, error) {
	var l wire.SkillList
	return l, c.call(ctx, http.MethodPost, "/api/v1/skills/import", in, &l)
}

// RemoveSkill removes a skill from the library.
func (c *Client) RemoveSkill(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/skills/"+esc(name), nil, nil)
}

// SkillDraft drafts a skill from a finished task.
func (c *Client) SkillDraft(ctx context.Context, taskID string) (wire.Skill, error) {
	var s wire.Skill
	return s, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(taskID)+"/skill-draft", nil, &s)
}
