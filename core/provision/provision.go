// Package provision keeps what VMs are given after they boot and before
// their agent starts (issue 20): environment variables, a secret one's value
// kept in the secret store, files of this computer copied to guest paths,
// and setup commands run in order. Each entry is for every VM or for the
// VMs of one template. The configuration is a JSON file of the data folder
// (config.Paths.Provisioning) in the API's shape (wire.Provisioning),
// without the secrets' values; Plan resolves it for one template, with the
// values, for the agent (core/agent applies it).
package provision

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Bounds of a configuration.
const (
	MaxVariables     = 64
	MaxValueBytes    = 32 << 10
	MaxFiles         = 32
	MaxFileBytes     = 16 << 20
	MaxCommands      = 32
	MaxCommandBytes  = 64 << 10
	MaxTimeout       = time.Hour
	DefaultTimeout   = 5 * time.Minute
	maxTemplateBytes = 128
	maxPathBytes     = 1024
	// MinSecretBytes is the shortest secret value: a shorter one could not
	// be redacted from what the guest shows back without redacting
	// everything.
	MinSecretBytes = 4
)

// reserved are the variables the guest's session and the helper set.
var reserved = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "IFS", "ENV", "BASH_ENV",
	"DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "LD_PRELOAD", "LD_LIBRARY_PATH", "TERM"}

// Reserved reports whether name may not be provisioned: the session's own
// variables and the helper's (HIVECREW_*).
func Reserved(name string) bool {
	return slices.Contains(reserved, strings.ToUpper(name)) || strings.HasPrefix(strings.ToUpper(name), "HIVECREW_")
}

// Validate checks a configuration and returns it normalised (file names
// from the source, modes spelled out, surrounding space trimmed). Secret
// values may be missing (kept from the store).
func Validate(c wire.Provisioning) (wire.Provisioning, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(c.EnvironmentVariables) > MaxVariables || len(c.InjectedFiles) > MaxFiles || len(c.SetupCommands) > MaxCommands {
		return c, errdefs.Invalidf("provisioning: at most %d variables, %d files and %d setup commands", MaxVariables, MaxFiles, MaxCommands)
	}
	out := wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{}, InjectedFiles: []wire.InjectedFile{}, SetupCommands: []wire.SetupCommand{}}
	seen := map[string]bool{}
	for i, v := range c.EnvironmentVariables {
		v.Key, v.Template = strings.TrimSpace(v.Key), strings.TrimSpace(v.Template)
		at := fmt.Sprintf("environmentVariables[%d]", i)
		switch {
		case !protocol.ValidEnvName(v.Key):
			bad("%s: key %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", at, truncate(v.Key))
		case Reserved(v.Key):
			bad("%s: %s is set by the VM's session or the helper and cannot be provisioned", at, v.Key)
		case seen[v.Template+"\x00"+v.Key]:
			bad("%s: %s is set twice%s", at, v.Key, scope(v.Template))
		}
		seen[v.Template+"\x00"+v.Key] = true
		switch {
		case len(v.Value) > MaxValueBytes:
			bad("%s: %s's value is over %d KiB", at, v.Key, MaxValueBytes>>10)
		case strings.ContainsRune(v.Value, 0):
			bad("%s: %s's value has a NUL byte", at, v.Key)
		case v.Secret && v.Value != "" && len(v.Value) < MinSecretBytes:
			bad("%s: a secret value needs at least %d characters (a shorter one could not be hidden from what the VM shows back)", at, MinSecretBytes)
		}
		checkTemplate(at, v.Template, bad)
		out.EnvironmentVariables = append(out.EnvironmentVariables, v)
	}
	for i, f := range c.InjectedFiles {
		at := fmt.Sprintf("injectedFiles[%d]", i)
		f.SourcePath, f.GuestPath, f.Template, f.FileName = strings.TrimSpace(f.SourcePath), strings.TrimSpace(f.GuestPath), strings.TrimSpace(f.Template), strings.TrimSpace(f.FileName)
		if f.SourcePath == "" || !filepath.IsAbs(f.SourcePath) || len(f.SourcePath) > maxPathBytes {
			bad("%s: sourcePath must be an absolute path of this computer", at)
		}
		if err := CheckGuestPath(f.GuestPath); err != nil {
			bad("%s: %v", at, err)
		}
		if f.FileName == "" {
			f.FileName = filepath.Base(f.SourcePath)
		}
		mode, err := parseMode(f.Mode)
		if err != nil {
			bad("%s: %v", at, err)
		}
		f.Mode = fmt.Sprintf("%04o", mode)
		checkTemplate(at, f.Template, bad)
		out.InjectedFiles = append(out.InjectedFiles, f)
	}
	for i, s := range c.SetupCommands {
		at := fmt.Sprintf("setupCommands[%d]", i)
		s.Command, s.Template = strings.TrimSpace(s.Command), strings.TrimSpace(s.Template)
		switch {
		case s.Command == "":
			bad("%s: the command is empty", at)
		case len(s.Command) > MaxCommandBytes || strings.ContainsRune(s.Command, 0) || !utf8.ValidString(s.Command):
			bad("%s: UTF-8 text of at most %d KiB without NUL bytes", at, MaxCommandBytes>>10)
		}
		if s.TimeoutSeconds < 0 || time.Duration(s.TimeoutSeconds)*time.Second > MaxTimeout {
			bad("%s: timeoutSeconds from 1 to %d (0: %d)", at, int(MaxTimeout.Seconds()), int(DefaultTimeout.Seconds()))
		}
		checkTemplate(at, s.Template, bad)
		out.SetupCommands = append(out.SetupCommands, s)
	}
	if len(problems) > 0 {
		return c, errdefs.Invalidf("provisioning: %s", strings.Join(problems, "; "))
	}
	return out, nil
}

func scope(template string) string {
	if template == "" {
		return " for every template"
	}
	return " for template " + template
}

func checkTemplate(at, t string, bad func(string, ...any)) {
	if len(t) > maxTemplateBytes || strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		bad("%s: template: a template's id or name (at most %d bytes, one line)", at, maxTemplateBytes)
	}
}

// CheckGuestPath checks a file's destination in the guest: an absolute
// path or one under the guest user's home ("~/…"), clean (no "..", no
// "//", no trailing "/"), one line.
func CheckGuestPath(p string) error {
	rest, home := strings.CutPrefix(p, "~/")
	switch {
	case p == "" || len(p) > maxPathBytes:
		return fmt.Errorf("guestPath: a path of at most %d bytes is required", maxPathBytes)
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("guestPath %q: control characters", truncate(p))
	case home && (rest == "" || path.Clean(rest) != rest || strings.HasPrefix(rest, "/") || rest == ".." || strings.HasPrefix(rest, "../")):
		return fmt.Errorf("guestPath %q: a clean path under ~/ (no .., no //)", truncate(p))
	case !home && (!path.IsAbs(p) || path.Clean(p) != p || p == "/"):
		return fmt.Errorf("guestPath %q: an absolute clean path (or one under ~/) naming a file", truncate(p))
	}
	return nil
}

func parseMode(s string) (fs.FileMode, error) {
	if strings.TrimSpace(s) == "" {
		return 0o644, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 8, 32)
	if err != nil || n > 0o777 || n&0o400 == 0 {
		return 0, fmt.Errorf("mode %q: octal permissions the owner can read, like 0644 or 0755", truncate(s))
	}
	return fs.FileMode(n), nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// CheckTask checks a task's own provisioning (POST /tasks' provisioning):
// its variables as Validate checks them (a task's are never secret), its
// setup commands without a template (they are for the task's VM). It
// returns it normalised.
func CheckTask(p wire.TaskProvisioning) (wire.TaskProvisioning, error) {
	c := wire.Provisioning{SetupCommands: p.SetupCommands}
	for _, k := range slices.Sorted(maps.Keys(p.Environment)) {
		c.EnvironmentVariables = append(c.EnvironmentVariables, wire.EnvironmentVariable{Key: k, Value: p.Environment[k]})
	}
	for i, s := range p.SetupCommands {
		if s.Template != "" {
			return p, errdefs.Invalidf("provisioning: setupCommands[%d]: a task's setup command is for its own VM: no template", i)
		}
	}
	c, err := Validate(c)
	if err != nil {
		return p, err
	}
	out := wire.TaskProvisioning{SetupCommands: c.SetupCommands}
	for _, v := range c.EnvironmentVariables {
		if out.Environment == nil {
			out.Environment = map[string]string{}
		}
		out.Environment[v.Key] = v.Value
	}
	if len(out.SetupCommands) == 0 {
		out.SetupCommands = nil
	}
	return out, nil
}

// Secrets is the secret store (core/secrets.Store) as provisioning uses it.
type Secrets interface {
	Get(ref string) (string, error)
	Set(ref, value string) error
	Delete(ref string) error
}

// SecretRef names a secret variable's value in the secret store.
func SecretRef(key, template string) string {
	if template == "" {
		return "provisioning/" + key
	}
	return "provisioning/" + key + "@" + template
}

// Store is the configuration in its file, its secret values in the secret
// store. It is safe for concurrent use.
type Store struct {
	path    string
	secrets Secrets

	// mu serialises Put.
	mu sync.Mutex
}

// NewStore returns the store of the file at path; secrets is required.
func NewStore(path string, secrets Secrets) *Store {
	return &Store{path: path, secrets: secrets}
}

// Get returns the configuration without the secrets' values (an empty
// one when the file does not exist).
func (s *Store) Get() (wire.Provisioning, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{}, InjectedFiles: []wire.InjectedFile{}, SetupCommands: []wire.SetupCommand{}}, nil
	}
	if err != nil {
		return wire.Provisioning{}, fmt.Errorf("read provisioning: %w", err)
	}
	var c wire.Provisioning
	if err := unmarshal(b, &c); err != nil {
		return wire.Provisioning{}, fmt.Errorf("read provisioning %s: %w", s.path, err)
	}
	c, err = Validate(c)
	if err != nil {
		return wire.Provisioning{}, fmt.Errorf("provisioning file %s: %w", s.path, err)
	}
	for i := range c.EnvironmentVariables {
		if c.EnvironmentVariables[i].Secret {
			c.EnvironmentVariables[i].Value = ""
		}
	}
	return c, nil
}

// Put replaces the configuration. A secret variable given without a value
// keeps its stored one (and is an error without one); the secrets of
// variables no longer there are removed. It returns what Get returns.
func (s *Store) Put(c wire.Provisioning) (wire.Provisioning, error) {
	c, err := Validate(c)
	if err != nil {
		return wire.Provisioning{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.Get()
	if err != nil {
		// A file that cannot be read is replaced (a PUT is how it is
		// repaired); the secrets of what it held stay stored.
		old = wire.Provisioning{}
	}
	set := map[string]string{}
	keep := map[string]bool{}
	for i, v := range c.EnvironmentVariables {
		if !v.Secret {
			continue
		}
		ref := SecretRef(v.Key, v.Template)
		keep[ref] = true
		if v.Value != "" {
			set[ref] = v.Value
		} else if stored, err := s.secrets.Get(ref); err != nil || stored == "" {
			return wire.Provisioning{}, errdefs.Invalidf("provisioning: environmentVariables[%d]: the secret %s needs a value", i, v.Key)
		}
		c.EnvironmentVariables[i].Value = ""
	}
	for ref, v := range set {
		if err := s.secrets.Set(ref, v); err != nil {
			return wire.Provisioning{}, errdefs.Unavailablef("store a provisioned secret: %v", err)
		}
	}
	if err := writeFile(s.path, marshal(c)); err != nil {
		return wire.Provisioning{}, fmt.Errorf("write provisioning: %w", err)
	}
	for _, v := range old.EnvironmentVariables {
		if ref := SecretRef(v.Key, v.Template); v.Secret && !keep[ref] {
			s.secrets.Delete(ref)
		}
	}
	return s.Get()
}

// Variable is a provisioned variable with its value.
type Variable struct {
	Name, Value string
	Secret      bool
}

// File is a file to copy into the VM.
type File struct {
	// Source is the file on this computer, read as the VM starts.
	Source    string
	GuestPath string
	Mode      fs.FileMode
}

// Command is a setup command.
type Command struct {
	Command string
	Timeout time.Duration
}

// Plan is what one VM is given: the entries for every template and those
// for its own (a variable of the template's replaces a global one of the
// same name), in order.
type Plan struct {
	Env      []Variable
	Files    []File
	Commands []Command
}

// Empty reports whether there is nothing to provision.
func (p Plan) Empty() bool { return len(p.Env) == 0 && len(p.Files) == 0 && len(p.Commands) == 0 }

// EnvMap returns the variables as run_shell's env.
func (p Plan) EnvMap() map[string]string {
	if len(p.Env) == 0 {
		return nil
	}
	m := make(map[string]string, len(p.Env))
	for _, v := range p.Env {
		m[v.Name] = v.Value
	}
	return m
}

// WithTask adds a task's own variables (each replacing a configured one of
// its name) and setup commands (after the configured ones).
func (p Plan) WithTask(env map[string]string, commands []Command) Plan {
	out := Plan{Env: slices.Clone(p.Env), Files: p.Files, Commands: append(slices.Clone(p.Commands), commands...)}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		v := Variable{Name: name, Value: env[name]}
		if i := slices.IndexFunc(out.Env, func(e Variable) bool { return e.Name == name }); i >= 0 {
			out.Env[i] = v
		} else {
			out.Env = append(out.Env, v)
		}
	}
	return out
}

// Plan resolves the configuration for a VM of the template known by any of
// names (its id, its name), reading the secrets' values.
func (s *Store) Plan(names ...string) (Plan, error) {
	c, err := s.Get()
	if err != nil {
		return Plan{}, err
	}
	applies := func(t string) bool { return t == "" || slices.Contains(names, t) }
	var p Plan
	at := map[string]int{}
	for _, v := range c.EnvironmentVariables {
		if !applies(v.Template) {
			continue
		}
		if v.Secret {
			if v.Value, err = s.secrets.Get(SecretRef(v.Key, v.Template)); err != nil {
				return Plan{}, fmt.Errorf("the provisioned secret %s: %w", v.Key, err)
			}
		}
		nv := Variable{Name: v.Key, Value: v.Value, Secret: v.Secret}
		if i, ok := at[v.Key]; ok {
			if v.Template != "" { // the template's own wins
				p.Env[i] = nv
			}
			continue
		}
		at[v.Key] = len(p.Env)
		p.Env = append(p.Env, nv)
	}
	for _, f := range c.InjectedFiles {
		if applies(f.Template) {
			mode, _ := parseMode(f.Mode)
			p.Files = append(p.Files, File{Source: f.SourcePath, GuestPath: f.GuestPath, Mode: mode})
		}
	}
	for _, cmd := range c.SetupCommands {
		if applies(cmd.Template) {
			p.Commands = append(p.Commands, Command{Command: cmd.Command, Timeout: cmp.Or(time.Duration(cmd.TimeoutSeconds)*time.Second, DefaultTimeout)})
		}
	}
	return p, nil
}
