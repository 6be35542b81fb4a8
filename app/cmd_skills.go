package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/skills"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdSkills: hivecrew skills ls|show|import|on|off|rm|draft — the skill
// library (SKILL.md folders) the agent is told of and reads with use_skill.
func cmdSkills(e *env, args []string) error {
	return runTable(e, "skills", []command{
		{"ls", "", "list the skill library", skillsLs},
		{"show", "NAME", "print a skill's instructions", skillsShow},
		{"import", "PATH | --git URL [--replace]", "import a skill folder, or every skill of a git repository", skillsImport},
		{"on", "NAME", "tell new tasks of a skill", skillsSwitch(true)},
		{"off", "NAME", "stop telling new tasks of a skill", skillsSwitch(false)},
		{"rm", "NAME", "remove a skill from the library", remover((*client.Client).RemoveSkill, "Removed skill %s.")},
		{"draft", "TASK [--save]", "draft a skill from a finished task (--save adds it)", skillsDraft},
	}, args)
}

func skillsShow(e *env, args []string) error {
	return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.Skill, error) {
		return c.Skill(e.ctx, pos[0])
	}, func(s wire.Skill) error {
		e.out("%s (%s): %s\n", s.Name, onOff(s.IsEnabled), oneLine(s.Description))
		e.out("%s", strings.TrimRight(s.Instructions, "\n"))
		return nil
	})
}

func skillsImport(e *env, args []string) error {
	fs := e.flags()
	git := fs.String("git", "", "a git repository's `URL` (https, git@ or file): every folder with a SKILL.md, up to three levels down")
	replace := fs.Bool("replace", false, "replace skills of the same name")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	in := wire.SkillImport{GitURL: *git, Replace: *replace}
	switch {
	case len(pos) > 1:
		return e.bad(fs, "skills import takes one folder")
	case (len(pos) == 1) == (*git != ""):
		return e.bad(fs, "skills import needs a folder with a SKILL.md, or --git URL")
	case len(pos) == 1:
		if in.Path, err = filepath.Abs(pos[0]); err != nil {
			return err
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	l, err := c.ImportSkills(e.ctx, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(l)
	}
	for _, s := range l.Skills {
		e.out("Imported skill %s: %s", s.Name, clip(oneLine(s.Description), 80))
	}
	return nil
}

func skillsDraft(e *env, args []string) error {
	fs := e.flags()
	save := fs.Bool("save", false, "add the draft to the library as it is")
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	c, id, err := e.connectTask(pos[0])
	if err != nil {
		return err
	}
	s, err := c.SkillDraft(e.ctx, id)
	if err != nil {
		return err
	}
	if *save {
		if s, err = c.SaveSkill(e.ctx, s); err != nil {
			return err
		}
	}
	if e.json {
		return e.printJSON(s)
	}
	// As a SKILL.md, to edit and import.
	md := skills.Skill{Name: s.Name, Description: s.Description, Instructions: s.Instructions}.Markdown()
	e.out("%s", strings.TrimRight(string(md), "\n"))
	if *save {
		fmt.Fprintf(e.stderr, "hivecrew: saved the skill %s\n", s.Name)
	}
	return nil
}

func skillsLs(e *env, args []string) error {
	return listing[wire.SkillList, wire.Skill]{
		get: func(c *client.Client, ctx context.Context) (wire.SkillList, error) {
			l, err := c.Skills(ctx)
			l.Skills = nonNil(l.Skills)
			return l, err
		},
		items:  func(l wire.SkillList) []wire.Skill { return l.Skills },
		none:   "No skills yet: hivecrew skills import PATH, or --git URL",
		header: []string{"NAME", "ON", "DESCRIPTION"},
		cells: func(s wire.Skill) []string {
			return []string{s.Name, onOff(s.IsEnabled), clip(oneLine(s.Description), 80)}
		},
		after: func(e *env, l wire.SkillList) {
			for _, p := range l.Problems {
				fmt.Fprintf(e.stderr, "hivecrew: not a skill: %s\n", oneLine(p))
			}
		},
	}.run(e, args)
}

// skillsSwitch is skills on (on) or off.
func skillsSwitch(on bool) func(e *env, args []string) error {
	return switcher((*client.Client).SetSkillEnabled, func(e *env, s wire.Skill, on bool) {
		if on {
			e.out("New tasks are told of the skill %s.", s.Name)
		} else {
			e.out("New tasks are not told of the skill %s.", s.Name)
		}
	})(on)
}
