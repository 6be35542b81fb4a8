package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hivecrew/hivecrew/core/agent"
	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/files"
)

// ForTask is what a task's agent gets of the library: a system prompt line
// per enabled skill (name and description), the instructions of the
// mentioned ones for its first message, and use_skill to read any other.
// A skill's other files are copied into the shared folder's skills/NAME
// when it is used; shared returns the VM's shared folder on the host (a
// held task may move to a fresh VM between uses).
func ForTask(enabled []Skill, mentioned []string, shared func() string) (prompt []string, first string, tools []agent.HostTool) {
	if len(enabled) == 0 {
		return nil, "", nil
	}
	byName := map[string]Skill{}
	var lines []string
	for _, s := range enabled {
		byName[s.Name] = s
		lines = append(lines, fmt.Sprintf("- %s: %s", s.Name, oneLine(s.Description)))
	}
	prompt = []string{"Skills (instructions for kinds of work; when one fits the task, call use_skill with its name before you start):\n" + strings.Join(lines, "\n")}
	var b strings.Builder
	for _, name := range mentioned {
		s, ok := byName[name]
		if !ok {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("The user asks you to use these skills:\n")
		}
		fmt.Fprintf(&b, "\n<skill name=%q>\n%s\n</skill>\n%s", s.Name, s.Instructions, filesNote(s, shared))
	}
	use := func(_ context.Context, raw json.RawMessage) (string, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return "", err
		}
		s, ok := byName[in.Name]
		if !ok {
			names := make([]string, 0, len(byName))
			for _, e := range enabled {
				names = append(names, e.Name)
			}
			return "", fmt.Errorf("there is no skill %q: the skills are %s", in.Name, strings.Join(names, ", "))
		}
		return fmt.Sprintf("<skill name=%q>\n%s\n</skill>\n%s", s.Name, s.Instructions, filesNote(s, shared)), nil
	}
	tools = []agent.HostTool{{
		Name:        config.UseSkill,
		Description: "Read a skill's instructions (the skills are listed in the system prompt), and get its files in the shared folder's skills/NAME.",
		Params:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`),
		Run:         use,
	}}
	return prompt, b.String(), tools
}

// filesNote copies a skill's files into the shared folder and says where
// they are ("" when SKILL.md is all it has).
func filesNote(s Skill, shared func() string) string {
	dir := shared()
	if dir == "" || onlySkillMD(s.Dir) {
		return ""
	}
	n, err := files.CarryInto(s.Dir, dir, "skills/"+s.Name)
	if err != nil {
		return fmt.Sprintf("(Its files could not be copied into the VM: %v.)\n", err)
	}
	return fmt.Sprintf("(Its %d files are in the shared folder's skills/%s.)\n", n, s.Name)
}

func onlySkillMD(dir string) bool {
	entries, err := readDirNames(dir)
	return err != nil || len(entries) == 1
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Draft drafts a skill from a finished task, for the user to edit before
// saving: its name from the title, its description and goal from the
// task's description, and its steps from the tool calls that were made
// (each once, in order, at most 30), its result from the summary.
func Draft(title, description, summary string, calls []string) Skill {
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(title), "-"), "-")
	if len(name) > 48 {
		name = strings.Trim(name[:48], "-")
	}
	if name == "" {
		name = "saved-task"
	}
	desc := oneLine(description)
	if len(desc) > 300 {
		desc = desc[:300] + "…"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Goal\n\n%s\n\n## Steps that worked\n\n", strings.TrimSpace(description))
	seen := map[string]bool{}
	n := 0
	for _, c := range calls {
		c = oneLine(c)
		if c == "" || seen[c] || n == 30 {
			continue
		}
		seen[c] = true
		n++
		if len(c) > 200 {
			c = c[:200] + "…"
		}
		fmt.Fprintf(&b, "%d. `%s`\n", n, strings.ReplaceAll(c, "`", "'"))
	}
	if summary != "" {
		fmt.Fprintf(&b, "\n## Result\n\n%s\n", strings.TrimSpace(summary))
	}
	return Skill{Name: name, Description: "Use for tasks like: " + desc, Instructions: b.String()}
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)
