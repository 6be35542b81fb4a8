package main

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdPresets: hivecrew presets add|save|ls|show|rename|rm|run
func cmdPresets(e *env, args []string) error {
	return runTable(e, "presets", []command{
		{"add", `NAME "<task>" [--file F]... [flags of run]`, "save a task as a preset, to launch by name", presetsAdd},
		{"save", "TASK NAME", "save a task you ran (its settings and input files) as a preset", presetsSave},
		{"ls", "", "list presets, most recently used first", presetsLs},
		{"show", "NAME", "show a preset", presetsShow},
		{"rename", "NAME NEW-NAME", "rename a preset", presetsRename},
		{"rm", "NAME", "delete a preset (tasks it launched stay)", remover((*client.Client).RemovePreset, "Deleted preset %q.")},
		{"run", `NAME ["<more instructions>"] [--wait | --follow]`, "launch a preset's task (prints the task id)", presetsRun},
	}, args)
}

func presetsAdd(e *env, args []string) error {
	fs := e.flags()
	var tf taskFlags
	tf.register(fs)
	var sf specFlags
	sf.register(fs)
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return e.bad(fs, `presets add needs a name and a task: hivecrew presets add "Weekly report" "<task>"`)
	}
	name := pos[0]
	desc, err := tf.finish(pos[1:], e.stdin())
	if err != nil {
		return err
	}
	if desc == "" {
		return e.bad(fs, `presets add needs a task: hivecrew presets add %q "<task>" (or --description-file F)`, name)
	}
	in, err := sf.task(e, fs, tf, desc)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	p, err := c.CreatePreset(e.ctx, wire.SavePreset{Name: name, Task: &in}, tf.files...)
	if err != nil {
		return err
	}
	return e.savedPreset(p)
}

func presetsSave(e *env, args []string) error {
	c, pos, err := e.connect(e.flags(), args, 2)
	if err != nil {
		return err
	}
	id, err := e.taskID(c, pos[0])
	if err != nil {
		return err
	}
	p, err := c.CreatePreset(e.ctx, wire.SavePreset{Name: pos[1], FromTaskID: id})
	if err != nil {
		return err
	}
	return e.savedPreset(p)
}

func (e *env) savedPreset(p wire.Preset) error {
	if e.json {
		return e.printJSON(p)
	}
	files := ""
	if n := len(p.InputFiles); n > 0 {
		files = " with " + plural(n, "input file")
	}
	e.out("Saved preset %q%s. Launch it with: hivecrew presets run %q", p.Name, files, p.Name)
	return nil
}

func presetsLs(e *env, args []string) error {
	return listing[wire.PresetList, wire.Preset]{
		get:    (*client.Client).Presets,
		items:  func(l wire.PresetList) []wire.Preset { return l.Presets },
		none:   `No presets yet: save one with hivecrew presets add NAME "<task>", or hivecrew presets save TASK NAME.`,
		header: []string{"NAME", "TASK", "MODEL", "FILES", "USED", "LAST USED"},
		cells: func(p wire.Preset) []string {
			last := "-"
			if p.LastUsedAt != nil {
				last = p.LastUsedAt.Local().Format("2006-01-02 15:04")
			}
			return []string{clip(p.Name, 30), clip(oneLine(p.Task.Description), 40), presetModel(p.Task),
				fmt.Sprint(len(p.InputFiles)), fmt.Sprint(p.UseCount), last}
		},
	}.run(e, args)
}

// presetModel is the provider and model a preset names ("default" for
// none: the default provider and its default model at launch).
func presetModel(t wire.CreateTask) string {
	switch {
	case t.ProviderName == "" && t.ModelID == "":
		return "default"
	case t.ModelID == "":
		return t.ProviderName
	case t.ProviderName == "":
		return t.ModelID
	}
	return t.ProviderName + ":" + t.ModelID
}

func presetsShow(e *env, args []string) error {
	return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.Preset, error) {
		return c.Preset(e.ctx, pos[0])
	}, func(p wire.Preset) error {
		t := p.Task
		var inputs []string
		for _, f := range p.InputFiles {
			inputs = append(inputs, fmt.Sprintf("%s (%s)", f.Name, size(f.Size)))
		}
		e.out("Preset %q (%s)", p.Name, p.ID)
		fields(e.stdout, field{"Task", strings.TrimSpace(t.Description)}, field{"Model", presetModel(t)},
			field{"Template", t.TemplateID}, field{"Limits", limitsText(t.TimeoutMinutes, t.MaxIterations)},
			field{"Network", t.NetworkMode}, field{"Folders", strings.Join(t.HostFolders, "\n")},
			field{"Files", strings.Join(inputs, "\n")}, field{"Launched", plural(p.UseCount, "time")})
		return nil
	})
}

// limitsText says a task's time and step limits (0: Settings' default).
func limitsText(minutes, steps int) string {
	var parts []string
	if minutes > 0 {
		parts = append(parts, fmt.Sprintf("%d minutes", minutes))
	}
	if steps > 0 {
		parts = append(parts, fmt.Sprintf("%d steps", steps))
	}
	return strings.Join(parts, ", ")
}

func presetsRename(e *env, args []string) error {
	c, pos, err := e.connect(e.flags(), args, 2)
	if err != nil {
		return err
	}
	if strings.TrimSpace(pos[1]) == "" {
		return errdefs.Invalidf("the new name is required")
	}
	p, err := c.UpdatePreset(e.ctx, pos[0], wire.SavePreset{Name: pos[1]})
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(p)
	}
	e.out("Renamed preset %q to %q.", pos[0], p.Name)
	return nil
}

func presetsRun(e *env, args []string) error {
	fs := e.flags()
	wait := fs.Bool("wait", false, "wait for the end and print the result (exit 0 only if completed)")
	follow := fs.Bool("follow", false, "print every activity event until the end, then the result")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return e.bad(fs, `presets run needs a preset's name: hivecrew presets run NAME ["<more instructions>"]`)
	case *wait && *follow:
		return e.bad(fs, "give --wait or --follow, not both")
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	t, err := c.RunPreset(e.ctx, pos[0], wire.RunPreset{ExtraInstructions: joinArgs(pos[1:])})
	if err != nil {
		return err
	}
	return e.afterCreate(c, t, *wait, *follow)
}
