package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/wire"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// taskFlags are the task configuration flags of run and schedules add.
type taskFlags struct {
	provider, model, outputDir string
	files                      listFlag
}

func (tf *taskFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.provider, "provider", "", "LLM `PROVIDER` (name or id; default: the default provider)")
	fs.StringVar(&tf.model, "model", "", "`MODEL` id (default: the provider's default model)")
	fs.Var(&tf.files, "file", "input `FILE` for the agent's inbox (repeatable)")
	fs.StringVar(&tf.outputDir, "output-dir", "", "`DIR` to save the output files in (default: Settings)")
}

// cmdRun: hivecrew run "<task>" [flags] [--wait | --follow]
func cmdRun(e *env, args []string) error {
	fs := e.flags()
	var tf taskFlags
	tf.register(fs)
	template := fs.String("template", "", "VM `TEMPLATE` id (default: the default template)")
	timeout := fs.Int("timeout", 0, "time limit in `MINUTES` (default: Settings)")
	maxIter := fs.Int("max-iterations", 0, "step limit `N` (default: Settings)")
	offline := fs.Bool("offline", false, "no internet access in the VM")
	var allow listFlag
	fs.Var(&allow, "allow", "allow `TOOL` without asking, for this task (e.g. run_shell; repeatable)")
	planFirst := fs.Bool("plan-first", false, "have the agent write a plan for approval first")
	wait := fs.Bool("wait", false, "wait for the end and print the result (exit 0 only if completed)")
	follow := fs.Bool("follow", false, "print every activity event until the end, then the result")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	desc := joinArgs(pos)
	switch {
	case desc == "":
		return e.bad(fs, `run needs a task: hivecrew run "<task>"`)
	case *wait && *follow:
		return e.bad(fs, "give --wait or --follow, not both")
	case *timeout < 0 || *maxIter < 0:
		return e.bad(fs, "--timeout and --max-iterations must not be negative")
	}
	in := wire.CreateTask{
		Description: desc, ProviderName: tf.provider, ModelID: tf.model, OutputDirectory: tf.outputDir,
		PlanFirst: *planFirst, TemplateID: *template, TimeoutMinutes: *timeout, MaxIterations: *maxIter,
	}
	if *offline {
		in.NetworkMode = "offline"
	}
	for _, tool := range allow {
		if in.ToolPolicy == nil {
			in.ToolPolicy = map[string]string{}
		}
		in.ToolPolicy[strings.TrimSpace(tool)] = "allow"
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	t, err := c.CreateTask(e.ctx, in, tf.files...)
	if err != nil {
		return err
	}
	if !*wait && !*follow {
		return e.printNewTask(t, nil)
	}
	final, err := e.waitTask(c, t, *follow)
	if e.ctx.Err() != nil {
		return fmt.Errorf("stopped waiting; task %s goes on (follow it with `hivecrew logs -f %s`, stop it with `hivecrew cancel %s`)", t.ID, shortID(t.ID), shortID(t.ID))
	}
	if err != nil {
		return err
	}
	return e.printResult(c, final)
}
