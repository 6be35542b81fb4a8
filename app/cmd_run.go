package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// budgetFlags set a task's budget (run, resume).
type budgetFlags struct {
	usd    float64
	tokens int64
}

func (b *budgetFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&b.usd, "budget-usd", 0, "pause the task once its LLM use costs `USD` (estimated from the price table; 0: no budget)")
	fs.Int64Var(&b.tokens, "budget-tokens", 0, "pause the task once it has used `N` LLM tokens (0: no budget)")
}

// values returns the flags given (nil for a flag left out).
func (b *budgetFlags) values(fs *flag.FlagSet) (usd *float64, tokens *int64) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "budget-usd":
			usd = &b.usd
		case "budget-tokens":
			tokens = &b.tokens
		}
	})
	return usd, tokens
}

// taskFlags are the task configuration flags of run and schedules add.
type taskFlags struct {
	provider, model, outputDir, descFile string
	files                                listFlag
}

func (tf *taskFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.provider, "provider", "", "LLM `PROVIDER` (name or id; default: the default provider)")
	fs.StringVar(&tf.model, "model", "", "`MODEL` id (default: the provider's default model)")
	fs.Var(&tf.files, "file", "input `FILE` for the agent's inbox (repeatable)")
	fs.StringVar(&tf.outputDir, "output-dir", "", "`DIR` to save the output files in (relative to here; default: Settings)")
	fs.StringVar(&tf.descFile, "description-file", "", "read the task from `F` (\"-\": stdin) instead of the command line")
}

// maxTaskText is the helper's limit on a task's text (the API refuses more).
const maxTaskText = 100_000

// finish resolves what the flags name against this process: a relative
// output folder against the working directory (the helper has its own),
// and the task's text from pos or --description-file (or "-" alone: stdin).
func (tf *taskFlags) finish(pos []string, stdin io.Reader) (string, error) {
	if tf.outputDir != "" && !filepath.IsAbs(tf.outputDir) {
		abs, err := filepath.Abs(tf.outputDir)
		if err != nil {
			return "", fmt.Errorf("--output-dir %s: %w", tf.outputDir, err)
		}
		tf.outputDir = abs
	}
	desc := joinArgs(pos)
	from := tf.descFile
	if desc == "-" && from == "" {
		from, desc = "-", ""
	}
	if from == "" {
		return desc, nil
	}
	if desc != "" {
		return "", errdefs.Invalidf("give the task as text or with --description-file, not both")
	}
	var r io.Reader = stdin
	if from != "-" {
		f, err := os.Open(from)
		if err != nil {
			return "", fmt.Errorf("--description-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxTaskText+1))
	if err != nil {
		return "", fmt.Errorf("read the task: %w", err)
	}
	if len(data) > maxTaskText {
		return "", errdefs.Invalidf("the task's text is over the limit of %d bytes: put long material in a file and pass it with --file", maxTaskText)
	}
	return strings.TrimSpace(string(data)), nil
}

// specFlags are the flags of a task's configuration, beyond taskFlags:
// run's and presets add's.
type specFlags struct {
	template, reasoning          *string
	timeout, maxIter             *int
	offline, internet, planFirst *bool
	allow, allowHosts, folders   listFlag
	envs, setups                 listFlag
	budget                       budgetFlags
}

func (sf *specFlags) register(fs *flag.FlagSet) {
	sf.template = fs.String("template", "", "VM `TEMPLATE` id (default: the default template)")
	sf.timeout = fs.Int("timeout", 0, "time limit in `MINUTES` (default: Settings)")
	sf.maxIter = fs.Int("max-iterations", 0, "step limit `N` (default: Settings)")
	sf.offline = fs.Bool("offline", false, "no network in the VM (the default unless Settings' networkMode is internet)")
	sf.internet = fs.Bool("internet", false, "outbound internet in the VM, under the egress policy (default: Settings' networkMode, offline for new installs)")
	fs.Var(&sf.allow, "allow", "allow `TOOL` without asking, for this task (e.g. run_shell; repeatable)")
	fs.Var(&sf.allowHosts, "allow-host", "let the VM reach `HOST` (name, address or CIDR) past the egress policy, for this task (repeatable)")
	fs.Var(&sf.folders, "folder", "give the task a copy of the host folder `DIR` to work on; you review its changes before they reach DIR (repeatable)")
	fs.Var(&sf.envs, "env", "set `NAME=VALUE` in the task's VM (every shell command and terminal; repeatable; not for secrets: Settings › Provisioning keeps those)")
	fs.Var(&sf.setups, "setup", "run `COMMAND` in the task's VM before the agent starts, after the configured ones; a failure fails the task (repeatable)")
	sf.reasoning = fs.String("reasoning", "", "reasoning `EFFORT` to ask the model for: none, minimal, low, medium, high or xhigh")
	sf.budget.register(fs)
	sf.planFirst = fs.Bool("plan-first", false, "have the agent write a plan for approval first")
}

// task checks the flags and returns the task they describe.
func (sf *specFlags) task(e *env, fs *flag.FlagSet, tf taskFlags, desc string) (wire.CreateTask, error) {
	switch {
	case *sf.offline && *sf.internet:
		return wire.CreateTask{}, e.bad(fs, "give --offline or --internet, not both")
	case *sf.timeout < 0 || *sf.maxIter < 0:
		return wire.CreateTask{}, e.bad(fs, "--timeout and --max-iterations must not be negative")
	}
	in := wire.CreateTask{
		Description: desc, ProviderName: tf.provider, ModelID: tf.model, OutputDirectory: tf.outputDir,
		PlanFirst: *sf.planFirst, TemplateID: *sf.template, TimeoutMinutes: *sf.timeout, MaxIterations: *sf.maxIter,
		AllowHosts: sf.allowHosts, ReasoningEffort: strings.TrimSpace(*sf.reasoning),
	}
	for _, f := range sf.folders {
		abs, err := filepath.Abs(f)
		if err != nil {
			return in, err
		}
		in.HostFolders = append(in.HostFolders, abs)
	}
	in.BudgetUSD, in.BudgetTokens = sf.budget.values(fs)
	if len(sf.envs) > 0 || len(sf.setups) > 0 {
		in.Provisioning = &wire.TaskProvisioning{}
		for _, kv := range sf.envs {
			name, value, ok := strings.Cut(kv, "=")
			if !ok {
				return in, e.bad(fs, "--env takes NAME=VALUE, not %q", kv)
			}
			if in.Provisioning.Environment == nil {
				in.Provisioning.Environment = map[string]string{}
			}
			in.Provisioning.Environment[name] = value
		}
		for _, cmd := range sf.setups {
			in.Provisioning.SetupCommands = append(in.Provisioning.SetupCommands, wire.SetupCommand{Command: cmd})
		}
	}
	if *sf.offline {
		in.NetworkMode = "offline"
	}
	if *sf.internet {
		in.NetworkMode = "internet"
	}
	for _, tool := range sf.allow {
		if in.ToolPolicy == nil {
			in.ToolPolicy = map[string]string{}
		}
		in.ToolPolicy[strings.TrimSpace(tool)] = "allow"
	}
	return in, nil
}

// cmdRun: hivecrew run "<task>" [flags] [--wait | --follow]
func cmdRun(e *env, args []string) error {
	fs := e.flags()
	var tf taskFlags
	tf.register(fs)
	var sf specFlags
	sf.register(fs)
	var compare listFlag
	fs.Var(&compare, "compare", "also run the task on `[PROVIDER:]MODEL`, to compare the results (repeatable)")
	copies := fs.Int("copies", 1, "run `N` copies on each model (1-8)")
	wait := fs.Bool("wait", false, "wait for the end and print the result (exit 0 only if completed)")
	follow := fs.Bool("follow", false, "print every activity event until the end, then the result")
	cont := fs.String("continue", "", "continue the finished task `ID`: its outputs become inputs, and the agent gets a summary of it")
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	desc, err := tf.finish(pos, e.stdin())
	if err != nil {
		return err
	}
	switch {
	case desc == "":
		return e.bad(fs, `run needs a task: hivecrew run "<task>" (or --description-file F, or - to read stdin)`)
	case *wait && *follow:
		return e.bad(fs, "give --wait or --follow, not both")
	case *copies < 1 || *copies > 8:
		return e.bad(fs, "--copies takes 1 to 8")
	case *follow && (len(compare) > 0 || *copies > 1):
		return e.bad(fs, "--follow follows one task: use --wait with --compare or --copies")
	}
	in, err := sf.task(e, fs, tf, desc)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if *cont != "" {
		if in.ContinuationSourceTaskID, err = e.taskID(c, *cont); err != nil {
			return err
		}
	}
	if len(compare) > 0 || *copies > 1 {
		return e.runBatch(c, in, compare, *copies, tf.files, *wait)
	}
	t, err := c.CreateTask(e.ctx, in, tf.files...)
	if err != nil {
		return err
	}
	return e.afterCreate(c, t, *wait, *follow)
}

// afterCreate prints a new task, or with wait or follow waits for its end
// (printing its events with follow) and prints its result.
func (e *env) afterCreate(c *client.Client, t wire.Task, wait, follow bool) error {
	if !wait && !follow {
		return e.printNewTask(t, nil)
	}
	if follow && !e.json {
		e.out("Task %s (%s)", t.ID, statusWords(t.Status))
	}
	final, err := e.waitTask(c, t, follow)
	if e.ctx.Err() != nil {
		return fmt.Errorf("stopped waiting; task %s goes on (follow it with `hivecrew logs -f %s`, stop it with `hivecrew cancel %s`)", t.ID, shortID(t.ID), shortID(t.ID))
	}
	if err != nil {
		return err
	}
	return e.printResult(c, final)
}

// runBatch runs one task on the --provider/--model and on every --compare
// model, --copies times each, as one batch; with wait, it prints every
// result and exits 0 only if all completed.
func (e *env) runBatch(c *client.Client, in wire.CreateTask, compare []string, copies int, files []string, wait bool) error {
	provider := in.ProviderName
	if provider == "" {
		ps, err := c.Providers(e.ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.IsDefault {
				provider = p.ID
			}
		}
		if provider == "" {
			return errdefs.Invalidf("no default provider: give --provider")
		}
	}
	n := copies
	batch := wire.CreateTaskBatch{CreateTask: in, Targets: []wire.BatchTarget{{ProviderID: provider, ModelID: in.ModelID, CopyCount: &n}}}
	batch.ProviderName, batch.ModelID = "", ""
	for _, m := range compare {
		p, model, ok := strings.Cut(m, ":")
		if !ok {
			p, model = provider, m
		}
		if strings.TrimSpace(model) == "" {
			return errdefs.Invalidf("--compare %q: want [PROVIDER:]MODEL", m)
		}
		batch.Targets = append(batch.Targets, wire.BatchTarget{ProviderID: p, ModelID: model, CopyCount: &n})
	}
	if batch.Targets[0].ModelID == "" {
		ps, err := c.Providers(e.ctx)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.ID == provider || strings.EqualFold(p.DisplayName, provider) {
				batch.Targets[0].ModelID = p.DefaultModelID
			}
		}
		if batch.Targets[0].ModelID == "" {
			return errdefs.Invalidf("--compare needs --model: provider %s has no default model", provider)
		}
	}
	out, err := c.CreateTaskBatch(e.ctx, batch, files...)
	if err != nil {
		return err
	}
	if !wait {
		if e.json {
			return e.printJSON(out)
		}
		for _, t := range out.Tasks {
			e.out("%s\t%s\t%s", t.ID, t.ProviderName, t.ModelID)
		}
		return nil
	}
	var failed error
	for i, t := range out.Tasks {
		final, err := e.waitTask(c, t, false)
		if e.ctx.Err() != nil {
			return fmt.Errorf("stopped waiting; the tasks go on (`hivecrew ls` lists them)")
		}
		if err != nil {
			return err
		}
		if i > 0 && !e.json {
			e.out("")
		}
		if !e.json {
			e.out("Model:    %s (%s)", final.ModelID, final.ProviderName)
		}
		if err := e.printResult(c, final); err != nil {
			failed = err
		}
	}
	return failed
}
