package provision

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// memSecrets is a secret store in memory.
type memSecrets map[string]string

func (m memSecrets) Get(ref string) (string, error) {
	if v, ok := m[ref]; ok {
		return v, nil
	}
	return "", errdefs.NotFoundf("no secret %s", ref)
}
func (m memSecrets) Set(ref, v string) error { m[ref] = v; return nil }
func (m memSecrets) Delete(ref string) error { delete(m, ref); return nil }

func TestValidateRefusesBadEntries(t *testing.T) {
	for name, c := range map[string]wire.Provisioning{
		"a digit first":       {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "1A", Value: "x"}}},
		"a dash":              {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "A-B", Value: "x"}}},
		"PATH":                {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "PATH", Value: "x"}}},
		"display in any case": {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "display", Value: "x"}}},
		"the helper's":        {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "HIVECREW_SHARED", Value: "x"}}},
		"twice":               {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "A", Value: "x"}, {Key: "A", Value: "y"}}},
		"a NUL":               {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "A", Value: "x\x00"}}},
		"a short secret":      {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "A", Value: "abc", Secret: true}}},
		"a huge value":        {EnvironmentVariables: []wire.EnvironmentVariable{{Key: "A", Value: strings.Repeat("x", MaxValueBytes+1)}}},
		"a relative source":   {InjectedFiles: []wire.InjectedFile{{SourcePath: "a.txt", GuestPath: "/opt/a"}}},
		"a relative guest":    {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "opt/a"}}},
		"dot-dot in the home": {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "~/../etc/passwd"}}},
		"an unclean path":     {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/opt//a"}}},
		"the root":            {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/"}}},
		"the home itself":     {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "~/"}}},
		"a newline":           {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/opt/a\nb"}}},
		"a mode over 0777":    {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/opt/a", Mode: "1777"}}},
		"an unreadable mode":  {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/opt/a", Mode: "0200"}}},
		"a mode not octal":    {InjectedFiles: []wire.InjectedFile{{SourcePath: "/a", GuestPath: "/opt/a", Mode: "rw"}}},
		"an empty command":    {SetupCommands: []wire.SetupCommand{{Command: "  "}}},
		"a negative timeout":  {SetupCommands: []wire.SetupCommand{{Command: "true", TimeoutSeconds: -1}}},
		"a timeout too long":  {SetupCommands: []wire.SetupCommand{{Command: "true", TimeoutSeconds: 3601}}},
		"a two-line template": {SetupCommands: []wire.SetupCommand{{Command: "true", Template: "a\nb"}}},
		"too many commands":   {SetupCommands: make([]wire.SetupCommand, MaxCommands+1)},
	} {
		if _, err := Validate(c); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	c, err := Validate(wire.Provisioning{
		EnvironmentVariables: []wire.EnvironmentVariable{{Key: " A ", Value: "x"}, {Key: "A", Value: "y", Template: "dev"}},
		InjectedFiles:        []wire.InjectedFile{{SourcePath: "/src/app.conf", GuestPath: "~/.config/app.conf"}, {SourcePath: "/b", GuestPath: "/opt/b", Mode: "755", FileName: "tool"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.EnvironmentVariables[0].Key != "A" || c.InjectedFiles[0].FileName != "app.conf" || c.InjectedFiles[0].Mode != "0644" ||
		c.InjectedFiles[1].Mode != "0755" || c.InjectedFiles[1].FileName != "tool" || c.SetupCommands == nil {
		t.Errorf("normalised: %+v", c)
	}
}

// TestStoreKeepsSecretsOutOfTheFile: a secret's value goes to the secret
// store only; Get never returns it; a PUT without it keeps it; a variable
// removed takes its secret with it; a refused PUT changes nothing.
func TestStoreKeepsSecretsOutOfTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "provisioning.json")
	sec := memSecrets{}
	s := NewStore(path, sec)
	if c, err := s.Get(); err != nil || c.EnvironmentVariables == nil || len(c.EnvironmentVariables) != 0 {
		t.Fatalf("empty: %+v %v", c, err)
	}
	const secret = "the-secret-value"
	got, err := s.Put(wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{
		{Key: "PLAIN", Value: "visible"}, {Key: "TOKEN", Value: secret, Secret: true}, {Key: "TOKEN", Value: "dev-" + secret, Secret: true, Template: "dev"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.EnvironmentVariables[0].Value != "visible" || got.EnvironmentVariables[1].Value != "" || !got.EnvironmentVariables[1].Secret {
		t.Fatalf("after put: %+v", got.EnvironmentVariables)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(b), secret) || !strings.Contains(string(b), "TOKEN") {
		t.Fatalf("the file: %s %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode is %v", fi.Mode())
	}
	if sec[SecretRef("TOKEN", "")] != secret || sec[SecretRef("TOKEN", "dev")] != "dev-"+secret {
		t.Fatalf("secret store: %v", sec)
	}

	// The plans: the template's own variable wins over the global one.
	p, err := s.Plan("tmpl-id", "dev")
	if err != nil || len(p.Env) != 2 || p.Env[1] != (Variable{Name: "TOKEN", Value: "dev-" + secret, Secret: true}) {
		t.Fatalf("plan for dev: %+v %v", p, err)
	}
	if p, _ := s.Plan("other"); len(p.Env) != 2 || p.Env[1].Value != secret || p.EnvMap()["PLAIN"] != "visible" {
		t.Fatalf("plan for another template: %+v", p)
	}

	// Sent back without its value, the secret is kept; the dev one dropped.
	if _, err := s.Put(wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{{Key: "TOKEN", Secret: true}}}); err != nil {
		t.Fatal(err)
	}
	if sec[SecretRef("TOKEN", "")] != secret {
		t.Error("the kept secret changed")
	}
	if _, ok := sec[SecretRef("TOKEN", "dev")]; ok {
		t.Error("the removed variable's secret is still stored")
	}
	// A refused PUT (a new secret without a value) changes nothing.
	before, _ := os.ReadFile(path)
	if _, err := s.Put(wire.Provisioning{EnvironmentVariables: []wire.EnvironmentVariable{{Key: "NEW", Secret: true}}}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("a secret without a value: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) || sec[SecretRef("TOKEN", "")] != secret {
		t.Error("a refused put changed the store")
	}
	// A hand-edited file that is wrong is an error, not an empty config.
	os.WriteFile(path, []byte(`{"environmentVariables":[{"key":"PATH","value":"x"}]}`), 0o600)
	if _, err := s.Get(); err == nil {
		t.Error("a bad file reads")
	}
}

// TestEnvFileQuotes: the guest's env file gives back every value exactly,
// quotes, dollars and newlines included, run as the guest's shell runs it.
func TestEnvFileQuotes(t *testing.T) {
	values := []string{`it's "quoted"`, "$HOME `id` $(id)", "two\nlines", `back\slash`}
	var p Plan
	for i, v := range values {
		p.Env = append(p.Env, Variable{Name: "V" + string(rune('A'+i)), Value: v})
	}
	file := filepath.Join(t.TempDir(), "env.sh")
	os.WriteFile(file, []byte(EnvFile(p)), 0o600)
	for i, v := range values {
		out, err := exec.Command("/bin/sh", "-c", `. "$1"; printenv "$2"`, "sh", file, p.Env[i].Name).Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != v {
			t.Errorf("%s = %q, want %q", p.Env[i].Name, got, v)
		}
	}
}

// TestPlaceFileCommand runs the guest's command on this machine's shell
// with a fake home: "~/" is the home, the folder is made, the mode set; a
// destination that is a folder is refused.
func TestPlaceFileCommand(t *testing.T) {
	shared, home := t.TempDir(), t.TempDir()
	p := Plan{Files: []File{{Source: filepath.Join(t.TempDir(), "src")}}}
	os.WriteFile(p.Files[0].Source, []byte("data"), 0o644)
	if err := Stage(p, shared); err != nil {
		t.Fatal(err)
	}
	place := func(dest string) ([]byte, error) {
		cmd := exec.Command("/bin/sh", "-c", PlaceFileCommand)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "HIVECREW_SHARED=" + shared,
			SourceVar + "=" + StagedName(0), DestVar + "=" + dest, ModeVar + "=0640"}
		return cmd.CombinedOutput()
	}
	if out, err := place("~/a b/$(id).conf"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	fi, err := os.Stat(filepath.Join(home, "a b", "$(id).conf"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("placed: %v %v", fi, err)
	}
	os.MkdirAll(filepath.Join(home, "dir"), 0o755)
	Stage(p, shared)
	if out, err := place("~/dir"); err == nil || !strings.Contains(string(out), "is a folder") {
		t.Errorf("a folder as the destination: %v %s", err, out)
	}
}

func TestStageRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, _ := os.Create(big)
	f.Truncate(MaxFileBytes + 1)
	f.Close()
	for name, src := range map[string]string{"missing": filepath.Join(dir, "nope"), "a folder": dir, "too large": big} {
		if err := Stage(Plan{Files: []File{{Source: src, GuestPath: "/opt/x"}}}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "/opt/x") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestTaskProvisioning: a task's variables replace configured ones of
// their name and its commands come after; its entries are checked as the
// configured ones are, and may not name a template.
func TestTaskProvisioning(t *testing.T) {
	p := Plan{Env: []Variable{{Name: "A", Value: "configured", Secret: true}, {Name: "B", Value: "b"}}, Commands: []Command{{Command: "first"}}}
	got := p.WithTask(map[string]string{"A": "task", "C": "c"}, []Command{{Command: "second"}})
	if len(got.Env) != 3 || got.Env[0] != (Variable{Name: "A", Value: "task"}) || got.Env[2].Name != "C" || len(got.Commands) != 2 || got.Commands[1].Command != "second" {
		t.Fatalf("with the task's: %+v", got)
	}
	if p.Env[0].Value != "configured" || len(p.Commands) != 1 {
		t.Fatal("WithTask changed the configured plan")
	}
	for name, tp := range map[string]wire.TaskProvisioning{
		"a bad name":  {Environment: map[string]string{"A B": "x"}},
		"reserved":    {Environment: map[string]string{"DISPLAY": ":1"}},
		"a template":  {SetupCommands: []wire.SetupCommand{{Command: "true", Template: "dev"}}},
		"empty":       {SetupCommands: []wire.SetupCommand{{Command: ""}}},
		"a long wait": {SetupCommands: []wire.SetupCommand{{Command: "true", TimeoutSeconds: 7200}}},
	} {
		if _, err := CheckTask(tp); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if ok, err := CheckTask(wire.TaskProvisioning{Environment: map[string]string{"X": "1"}, SetupCommands: []wire.SetupCommand{{Command: " make "}}}); err != nil ||
		ok.Environment["X"] != "1" || ok.SetupCommands[0].Command != "make" {
		t.Fatalf("a good one: %+v %v", ok, err)
	}
}
