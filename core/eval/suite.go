package eval

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of a suite, so that a suite from anywhere loads in bounded time
// and memory.
const (
	maxTaskFile    = 1 << 20
	maxTasks       = 1000
	maxSteps       = 64
	maxChecks      = 16
	maxOracle      = 200
	maxInstruction = 20_000
	// maxSetup is what the setup command (inline files included) may
	// take: the helper's limit for a hook command.
	maxSetup = 60 << 10
	// maxFile bounds a suite's file and an output a check reads.
	maxFile = 16 << 20
)

// Suite is a folder of tasks.
type Suite struct {
	// Name is the folder's name; Dir its path.
	Name string
	Dir  string
	// Tasks are the tasks that loaded, in file name order.
	Tasks []Task
	// Problems are the tasks that did not, one per file.
	Problems []Problem
}

// Problem is a task that cannot run, and why.
type Problem struct {
	File string `json:"file"`
	ID   string `json:"id,omitempty"`
	Err  string `json:"error"`
}

// Task is one task of a suite: its file, close to OSWorld's task configs.
type Task struct {
	ID          string `json:"id"`
	Instruction string `json:"instruction"`
	// Template is the VM template's id ("" for the helper's default).
	Template string `json:"template,omitempty"`
	// Source says where the idea comes from: "osworld" or "hivecrew".
	Source string `json:"source,omitempty"`
	// Category groups tasks in the report (files, terminal, editor, …).
	Category  string    `json:"category,omitempty"`
	Config    []Step    `json:"config,omitempty"`
	Evaluator Evaluator `json:"evaluator"`
	Limits    Limits    `json:"limits,omitempty"`
	// ToolPolicy is merged over the runner's (every guest tool allowed,
	// the questions to the user denied: no one answers them).
	ToolPolicy map[string]string `json:"toolPolicy,omitempty"`
	// Oracle is a scripted solution: the tool calls that solve the task,
	// replayed by a scripted provider (make eval-selftest).
	Oracle []ToolCall `json:"oracle"`

	// File is the task's file name in the suite.
	File string `json:"-"`
}

// Step is one setup step, run in order before the agent starts.
//   - inbox: the suite's file From into the task's inbox as Name.
//   - file: a file at Path in the guest, from Content or the suite's
//     file From.
//   - command: Command in the guest's shell; it must exit 0.
//   - open: App (with Args) started in the background, then a pause for
//     its window.
type Step struct {
	Type    string   `json:"type"`
	From    string   `json:"from,omitempty"`
	Name    string   `json:"name,omitempty"`
	Path    string   `json:"path,omitempty"`
	Content *string  `json:"content,omitempty"`
	Command string   `json:"command,omitempty"`
	App     string   `json:"app,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// Evaluator is a task's checkers: it passes when every one passes.
type Evaluator struct {
	Checks []Check `json:"checks"`
}

// Check is one checker.
//   - command: Command run in the guest after the agent stops (exit 0
//     passes; at most one per task).
//   - file: the output Output equals the suite's file Expected byte for
//     byte.
//   - json: Output is JSON equal to Expected (a file) or Value.
//   - csv: Output is CSV with the same rows as Expected (in any order
//     with IgnoreOrder); cells are compared trimmed.
//   - regex: Output's text matches Pattern.
//   - image: Output is an image whose similarity to Expected is at
//     least Threshold (0..1).
type Check struct {
	Type        string          `json:"type"`
	Command     string          `json:"command,omitempty"`
	Output      string          `json:"output,omitempty"`
	Expected    string          `json:"expected,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Pattern     string          `json:"pattern,omitempty"`
	IgnoreOrder bool            `json:"ignoreOrder,omitempty"`
	Threshold   float64         `json:"threshold,omitempty"`
}

// Limits bound a task's run.
type Limits struct {
	TimeoutMinutes int `json:"timeoutMinutes,omitempty"`
	MaxIterations  int `json:"maxIterations,omitempty"`
}

// ToolCall is one step of an oracle.
type ToolCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Load reads the suite in dir: every *.json file at its top is a task.
// Only a suite that cannot be read at all is an error.
func Load(dir string) (Suite, error) {
	s := Suite{Name: filepath.Base(filepath.Clean(dir)), Dir: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return s, fmt.Errorf("read suite: %w", err)
	}
	seen := map[string]string{}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if n++; n > maxTasks {
			return s, fmt.Errorf("read suite %s: more than %d tasks", dir, maxTasks)
		}
		t, err := loadTask(dir, e.Name())
		if err == nil && seen[t.ID] != "" {
			err = fmt.Errorf("id %q is also the id of %s", t.ID, seen[t.ID])
		}
		if err != nil {
			s.Problems = append(s.Problems, Problem{File: e.Name(), ID: t.ID, Err: err.Error()})
			continue
		}
		seen[t.ID] = e.Name()
		s.Tasks = append(s.Tasks, t)
	}
	if len(s.Tasks) == 0 && len(s.Problems) == 0 {
		return s, fmt.Errorf("read suite %s: no task files (*.json)", dir)
	}
	return s, nil
}

// loadTask reads and validates one task file.
func loadTask(dir, name string) (Task, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return Task{}, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxTaskFile+1)); err != nil {
		return Task{}, err
	}
	if buf.Len() > maxTaskFile {
		return Task{}, fmt.Errorf("over %d bytes", maxTaskFile)
	}
	t, err := Parse(buf.Bytes())
	if err != nil {
		return t, err
	}
	t.File = name
	return t, t.checkFiles(dir)
}

// Parse decodes and validates a task (without its files: see Load). A
// field of the wrong type or an unknown field is an error.
func Parse(b []byte) (Task, error) {
	var t Task
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("not a task: %w", err)
	}
	if dec.More() {
		return t, errors.New("not a task: more than one JSON value")
	}
	return t, t.validate()
}

func (t Task) validate() error {
	switch {
	case !idPattern.MatchString(t.ID):
		return fmt.Errorf("id %q: want 1 to 64 of a-z, 0-9 and -, starting with a letter or digit", t.ID)
	case strings.TrimSpace(t.Instruction) == "":
		return errors.New("instruction is required")
	case len(t.Instruction) > maxInstruction:
		return fmt.Errorf("instruction is over %d bytes", maxInstruction)
	case t.Source != "" && t.Source != "osworld" && t.Source != "hivecrew":
		return fmt.Errorf("source %q: want osworld or hivecrew", t.Source)
	case len(t.Config) > maxSteps:
		return fmt.Errorf("config has %d steps, over %d", len(t.Config), maxSteps)
	case len(t.Evaluator.Checks) == 0:
		return errors.New("evaluator.checks is required: a task without a checker measures nothing")
	case len(t.Evaluator.Checks) > maxChecks:
		return fmt.Errorf("evaluator has %d checks, over %d", len(t.Evaluator.Checks), maxChecks)
	case len(t.Oracle) > maxOracle:
		return fmt.Errorf("oracle has %d calls, over %d", len(t.Oracle), maxOracle)
	case t.Limits.TimeoutMinutes < 0 || t.Limits.TimeoutMinutes > 24*60:
		return fmt.Errorf("limits.timeoutMinutes %d: want 0..1440", t.Limits.TimeoutMinutes)
	case t.Limits.MaxIterations < 0 || t.Limits.MaxIterations > 10_000:
		return fmt.Errorf("limits.maxIterations %d: want 0..10000", t.Limits.MaxIterations)
	}
	for _, text := range []string{t.ID, t.Instruction, t.Template, t.Category} {
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
			return errors.New("text fields must be UTF-8 without NUL")
		}
	}
	for i, s := range t.Config {
		if err := s.validate(); err != nil {
			return fmt.Errorf("config[%d] (%s): %w", i, s.Type, err)
		}
	}
	commands := 0
	for i, c := range t.Evaluator.Checks {
		if c.Type == "command" {
			commands++
		}
		if err := c.validate(); err != nil {
			return fmt.Errorf("evaluator.checks[%d] (%s): %w", i, c.Type, err)
		}
	}
	if commands > 1 {
		return errors.New("evaluator: at most one command check (join commands with &&)")
	}
	for i, o := range t.Oracle {
		var args map[string]any
		if strings.TrimSpace(o.Tool) == "" {
			return fmt.Errorf("oracle[%d]: tool is required", i)
		}
		if err := json.Unmarshal(o.Args, &args); err != nil || args == nil {
			return fmt.Errorf("oracle[%d] (%s): args must be a JSON object", i, o.Tool)
		}
	}
	return nil
}

func (s Step) validate() error {
	switch s.Type {
	case "inbox":
		if s.From == "" {
			return errors.New("from is required")
		}
		return checkRel(s.From)
	case "file":
		if err := checkGuestPath(s.Path); err != nil {
			return err
		}
		if (s.Content == nil) == (s.From == "") {
			return errors.New("give exactly one of content and from")
		}
		if s.From != "" {
			return checkRel(s.From)
		}
		return nil
	case "command":
		if strings.TrimSpace(s.Command) == "" {
			return errors.New("command is required")
		}
		return nil
	case "open":
		if strings.TrimSpace(s.App) == "" {
			return errors.New("app is required")
		}
		return nil
	}
	return fmt.Errorf("unknown step type %q: want inbox, file, command or open", s.Type)
}

func (c Check) validate() error {
	switch c.Type {
	case "command":
		if strings.TrimSpace(c.Command) == "" {
			return errors.New("command is required")
		}
		return nil
	case "file", "json", "csv", "regex", "image":
	default:
		return fmt.Errorf("unknown check type %q: want command, file, json, csv, regex or image", c.Type)
	}
	if err := checkOutputName(c.Output); err != nil {
		return err
	}
	switch c.Type {
	case "json":
		if (c.Expected == "") == (len(c.Value) == 0) {
			return errors.New("give exactly one of expected and value")
		}
		if len(c.Value) > 0 && !json.Valid(c.Value) {
			return errors.New("value is not JSON")
		}
	case "regex":
		if c.Pattern == "" {
			return errors.New("pattern is required")
		}
		if _, err := regexp.Compile(c.Pattern); err != nil {
			return fmt.Errorf("pattern: %w", err)
		}
		return nil
	case "image":
		if c.Threshold <= 0 || c.Threshold > 1 {
			return fmt.Errorf("threshold %g: want a similarity in (0, 1]", c.Threshold)
		}
	}
	if c.Type != "json" || c.Expected != "" {
		if c.Expected == "" {
			return errors.New("expected is required")
		}
		return checkRel(c.Expected)
	}
	return nil
}

// checkRel checks a path of a suite's file: relative, inside the suite.
func checkRel(p string) error {
	if p == "" || !fs.ValidPath(p) || strings.Contains(p, `\`) {
		return fmt.Errorf("%q: want a path inside the suite's folder, with /", p)
	}
	return nil
}

// checkOutputName checks the name of an output file (in the outbox).
func checkOutputName(p string) error {
	if p == "" {
		return errors.New("output is required: the file's path in the outbox")
	}
	if !fs.ValidPath(p) || strings.Contains(p, `\`) || strings.HasPrefix(path.Base(p), ".") {
		return fmt.Errorf("output %q: want a path in the outbox, not hidden", p)
	}
	return nil
}

// checkGuestPath checks a path in the guest: absolute or under ~/.
func checkGuestPath(p string) error {
	rest, home := strings.CutPrefix(p, "~/")
	if !home {
		rest = strings.TrimPrefix(p, "/")
		if rest == p {
			return fmt.Errorf("path %q: want an absolute path or one under ~/", p)
		}
	}
	if !fs.ValidPath(rest) || rest == "." {
		return fmt.Errorf("path %q: want a clean path to a file", p)
	}
	return nil
}

// checkFiles checks that the suite's files the task names exist, inside
// the suite (a link out of it is refused).
func (t Task) checkFiles(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var names []string
	for _, s := range t.Config {
		if s.From != "" {
			names = append(names, s.From)
		}
	}
	for _, c := range t.Evaluator.Checks {
		if c.Expected != "" {
			names = append(names, c.Expected)
		}
	}
	for _, n := range names {
		fi, err := root.Stat(n)
		if err != nil {
			return fmt.Errorf("file %s: %w", n, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("file %s is not a regular file", n)
		}
	}
	if _, err := t.SetupCommand(dir); err != nil {
		return err
	}
	return nil
}

// Inputs returns the paths of the task's inbox files (with the names
// they get in the inbox, for a file whose step renames it: a copy named
// so is made in tmp).
func (t Task) Inputs(dir, tmp string) ([]string, error) {
	var out []string
	for _, s := range t.Config {
		if s.Type != "inbox" {
			continue
		}
		src := filepath.Join(dir, filepath.FromSlash(s.From))
		if s.Name == "" || s.Name == path.Base(s.From) {
			out = append(out, src)
			continue
		}
		b, err := readSuiteFile(dir, s.From)
		if err != nil {
			return nil, err
		}
		d, err := os.MkdirTemp(tmp, "in-")
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(d, filepath.Base(s.Name))
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

// SetupCommand returns the shell script of the task's setup steps in the
// guest ("" when it has none besides inbox files).
func (t Task) SetupCommand(dir string) (string, error) {
	var b strings.Builder
	for _, s := range t.Config {
		switch s.Type {
		case "file":
			var data []byte
			if s.Content != nil {
				data = []byte(*s.Content)
			} else {
				var err error
				if data, err = readSuiteFile(dir, s.From); err != nil {
					return "", err
				}
			}
			p := guestPath(s.Path)
			fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\" && printf %%s %s | base64 -d > %s || exit 1\n", p, base64.StdEncoding.EncodeToString(data), p)
		case "command":
			fmt.Fprintf(&b, "( %s\n) || exit 1\n", s.Command)
		case "open":
			args := []string{quote(s.App)}
			for _, a := range s.Args {
				args = append(args, guestArg(a))
			}
			fmt.Fprintf(&b, "setsid -f %s >/dev/null 2>&1 </dev/null || exit 1\nsleep 2\n", strings.Join(args, " "))
		}
	}
	if b.Len() > maxSetup {
		return "", fmt.Errorf("its setup is %d bytes, over %d (inline files count): put large files in the inbox", b.Len(), maxSetup)
	}
	if b.Len() == 0 {
		return "", nil
	}
	return "set -u\ncd \"$HOME\" || exit 1\n" + b.String(), nil
}

// CheckCommand is the task's command check ("" when it has none).
func (t Task) CheckCommand() string {
	for _, c := range t.Evaluator.Checks {
		if c.Type == "command" {
			return c.Command
		}
	}
	return ""
}

// Policy is the tool policy a task runs with: every tool allowed but the
// questions to a user (no one answers during a run), then the task's own.
func (t Task) Policy() map[string]string {
	p := map[string]string{
		"run_shell": "allow", "open_terminal": "allow", "open_app": "allow", "open_file": "allow", "open_url": "allow",
		"write_file": "allow", "move_file": "allow",
		"ask_text_question": "deny", "ask_multiple_choice": "deny", "request_user_intervention": "deny",
	}
	for k, v := range t.ToolPolicy {
		p[k] = v
	}
	return p
}

// readSuiteFile reads a file of the suite, which may not leave it.
func readSuiteFile(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFile+1)); err != nil {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	if buf.Len() > maxFile {
		return nil, fmt.Errorf("file %s is over %d bytes", name, maxFile)
	}
	return buf.Bytes(), nil
}

// quote quotes s for /bin/sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// guestPath quotes a guest path, ~/ as $HOME.
func guestPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return `"$HOME"/` + quote(rest)
	}
	return quote(p)
}

// guestArg quotes an argument of an app, ~/ as $HOME.
func guestArg(a string) string {
	if strings.HasPrefix(a, "~/") {
		return guestPath(a)
	}
	return quote(a)
}
