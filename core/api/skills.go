package api

import (
	"cmp"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/orchestrator"
	"github.com/hivecrew/hivecrew/core/skills"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Skills (issue 19.4): GET /skills as the Swift API answers it, and, as
// extensions, a skill's instructions, saving, importing, turning off and
// removing, and a draft from a finished task ("Save as skill").

func (a *API) library() skills.Library { return skills.Library{Dir: a.cfg.Paths.Skills()} }

func skillJSON(s skills.Skill, full bool) wire.Skill {
	out := wire.Skill{Name: s.Name, Description: s.Description, IsEnabled: s.Enabled}
	if full {
		out.Instructions = s.Instructions
	}
	return out
}

func (a *API) listSkills(w http.ResponseWriter, r *http.Request) error {
	all, problems := a.library().List()
	out := wire.SkillList{Skills: make([]wire.Skill, len(all))}
	for i, s := range all {
		out.Skills[i] = skillJSON(s, false)
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, p.Error())
	}
	return writeJSON(w, http.StatusOK, out)
}

func (a *API) getSkill(w http.ResponseWriter, r *http.Request) error {
	s, err := a.library().Get(r.PathValue("name"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, skillJSON(s, true))
}

// saveSkill answers POST /skills (a new skill) and PUT /skills/:name.
func (a *API) saveSkill(w http.ResponseWriter, r *http.Request) error {
	var in wire.Skill
	if err := decode(w, r, &in); err != nil {
		return err
	}
	lib := a.library()
	status := http.StatusCreated
	if name := r.PathValue("name"); name != "" {
		if _, err := lib.Get(name); err != nil {
			return err
		}
		if in.Name != "" && in.Name != name {
			return errdefs.Invalidf("name %q: a skill keeps its name (save it as a new one and remove this)", in.Name)
		}
		in.Name, status = name, http.StatusOK
	} else if _, err := lib.Get(in.Name); err == nil {
		return errdefs.Conflictf("a skill named %s exists already", in.Name)
	}
	s, err := lib.Save(skills.Skill{Name: in.Name, Description: in.Description, Instructions: in.Instructions})
	if err != nil {
		return err
	}
	return writeJSON(w, status, skillJSON(s, true))
}

func (a *API) patchSkill(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		IsEnabled *bool `json:"isEnabled"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	if in.IsEnabled == nil {
		return errdefs.Invalidf("give isEnabled: true or false")
	}
	s, err := a.library().SetEnabled(r.PathValue("name"), *in.IsEnabled)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, skillJSON(s, false))
}

func (a *API) deleteSkill(w http.ResponseWriter, r *http.Request) error {
	if err := a.library().Delete(r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// importSkills copies a skill folder, or every skill of a git repository,
// into the library. Reading a folder of this computer or running git is
// for an API key or a fresh web sign-in, as adding an MCP server is.
func (a *API) importSkills(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Importing a skill"); err != nil {
		return err
	}
	var in wire.SkillImport
	if err := decode(w, r, &in); err != nil {
		return err
	}
	lib := a.library()
	var got []skills.Skill
	switch {
	case (in.Path == "") == (in.GitURL == ""):
		return errdefs.Invalidf("give path (a folder with a SKILL.md) or gitUrl")
	case in.Path != "":
		if !filepath.IsAbs(in.Path) {
			return errdefs.Invalidf("path %q: want an absolute path", in.Path)
		}
		s, err := lib.ImportDir(in.Path, in.Replace)
		if err != nil {
			return err
		}
		got = append(got, s)
	default:
		ss, err := lib.ImportGit(r.Context(), strings.TrimSpace(in.GitURL), in.Replace)
		if err != nil {
			return err
		}
		got = ss
	}
	out := wire.SkillList{Skills: make([]wire.Skill, len(got))}
	for i, s := range got {
		out.Skills[i] = skillJSON(s, false)
	}
	return writeJSON(w, http.StatusCreated, out)
}

// skillDraft drafts a skill from a finished task, for the user to edit and
// save (it is not saved).
func (a *API) skillDraft(w http.ResponseWriter, r *http.Request) error {
	t, err := a.st.GetTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if !t.Status.Terminal() {
		return errdefs.Conflictf("task %s is %s: a skill is drafted from a finished task", t.ID, t.Status)
	}
	events, err := a.st.ListEvents(r.Context(), t.ID, 0, 0)
	if err != nil {
		return err
	}
	var calls []string
	for _, e := range events {
		if e.Type == "tool_call_start" && e.ActivityType == "tool_call" {
			calls = append(calls, e.Summary)
		}
	}
	summary := ""
	if t.ResultSummary != nil {
		summary = *t.ResultSummary
	}
	d := skills.Draft(cmp.Or(t.Title, strings.SplitN(t.Description, "\n", 2)[0]), t.Description, summary, calls)
	return writeJSON(w, http.StatusOK, skillJSON(skills.Skill{Name: d.Name, Description: d.Description, Instructions: d.Instructions, Enabled: true}, true))
}

func (a *API) webSearch(w http.ResponseWriter, r *http.Request) error {
	s := a.cfg.Settings()
	key, _ := a.cfg.Secrets.Get(orchestrator.WebSearchKeyRef)
	return writeJSON(w, http.StatusOK, wire.WebSearch{Backend: s.WebSearchBackend, URL: s.WebSearchURL, HasAPIKey: key != ""})
}

// setWebSearchKey stores (or, empty, removes) the search API's key.
func (a *API) setWebSearchKey(w http.ResponseWriter, r *http.Request) error {
	if err := requireStepUp(r, "Storing the search API key"); err != nil {
		return err
	}
	var in wire.WebSearch
	if err := decode(w, r, &in); err != nil {
		return err
	}
	in.APIKey = strings.TrimSpace(in.APIKey)
	if strings.ContainsAny(in.APIKey, "\r\n") || len(in.APIKey) > 1024 {
		return errdefs.Invalidf("apiKey: one line of at most 1024 bytes")
	}
	if in.APIKey == "" {
		a.cfg.Secrets.Delete(orchestrator.WebSearchKeyRef)
	} else if err := a.cfg.Secrets.Set(orchestrator.WebSearchKeyRef, in.APIKey); err != nil {
		return errdefs.Unavailablef("store the search API key: %v", err)
	}
	return a.webSearch(w, r)
}
