package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodTask = `{"id": "good", "instruction": "Sort names.txt into the outbox as sorted.txt.",
	"config": [{"type": "inbox", "from": "files/names.txt"}, {"type": "file", "path": "~/a b/it's.txt", "content": "x"},
		{"type": "command", "command": "mkdir -p ~/data"}, {"type": "open", "app": "mousepad", "args": ["~/a b/it's.txt"]}],
	"evaluator": {"checks": [{"type": "file", "output": "sorted.txt", "expected": "files/sorted.txt"}, {"type": "command", "command": "test -d ~/data"}]},
	"limits": {"timeoutMinutes": 5, "maxIterations": 20},
	"oracle": [{"tool": "run_shell", "args": {"command": "sort"}}]}`

func writeSuite(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadKeepsTheGoodTasks: each malformed task is an error of its own
// that says what is wrong; the good one loads.
func TestLoadKeepsTheGoodTasks(t *testing.T) {
	bad := map[string]struct{ body, want string }{
		"bad-id.json":         {`{"id": "Bad ID", "instruction": "x", "evaluator": {"checks": [{"type": "command", "command": "true"}]}, "oracle": []}`, `id "Bad ID"`},
		"unknown-field.json":  {`{"id": "a", "instructions": "x"}`, `unknown field "instructions"`},
		"wrong-type.json":     {`{"id": "a", "instruction": "x", "limits": {"timeoutMinutes": "5"}}`, "cannot unmarshal string"},
		"no-checker.json":     {`{"id": "a", "instruction": "x", "evaluator": {"checks": []}, "oracle": []}`, "evaluator.checks is required"},
		"two-commands.json":   {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "command", "command": "true"}, {"type": "command", "command": "true"}]}}`, "at most one command check"},
		"escape.json":         {`{"id": "a", "instruction": "x", "config": [{"type": "inbox", "from": "../secret"}], "evaluator": {"checks": [{"type": "command", "command": "true"}]}}`, `config[0] (inbox): "../secret": want a path inside the suite's folder`},
		"missing-file.json":   {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "file", "output": "o.txt", "expected": "files/nope.txt"}]}}`, "file files/nope.txt"},
		"link-out.json":       {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "file", "output": "o.txt", "expected": "out.txt"}]}}`, "out.txt"},
		"bad-regex.json":      {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "regex", "output": "o.txt", "pattern": "("}]}}`, "pattern: error parsing regexp"},
		"hidden-output.json":  {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "regex", "output": ".bashrc", "pattern": "x"}]}}`, `output ".bashrc"`},
		"guest-path.json":     {`{"id": "a", "instruction": "x", "config": [{"type": "file", "path": "rel.txt", "content": ""}], "evaluator": {"checks": [{"type": "command", "command": "true"}]}}`, `path "rel.txt"`},
		"no-oracle-args.json": {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "command", "command": "true"}]}, "oracle": [{"tool": "wait", "args": 3}]}`, "args must be a JSON object"},
		"threshold.json":      {`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "image", "output": "a.png", "expected": "files/names.txt", "threshold": 2}]}}`, "threshold 2"},
		"zz-dup.json":         {strings.Replace(goodTask, `"Sort`, `"Also sort`, 1), `also the id of good.json`},
	}
	files := map[string]string{"good.json": goodTask, "files/names.txt": "b\na\n", "files/sorted.txt": "a\nb\n", "README.md": "not a task"}
	for name, b := range bad {
		files[name] = b.body
	}
	dir := writeSuite(t, files)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o600)
	if err := os.Symlink(outside, filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tasks) != 1 || s.Tasks[0].ID != "good" {
		t.Fatalf("tasks %+v; want only good", s.Tasks)
	}
	got := map[string]string{}
	for _, p := range s.Problems {
		got[p.File] = p.Err
	}
	for name, b := range bad {
		if !strings.Contains(got[name], b.want) {
			t.Errorf("%s: error %q; want it to say %q", name, got[name], b.want)
		}
	}
	if len(got) != len(bad) {
		t.Errorf("%d problems, want %d: %q", len(got), len(bad), got)
	}
	setup, err := s.Tasks[0].SetupCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"$HOME"/'a b/it'\''s.txt'`, "base64 -d", "( mkdir -p ~/data\n) || exit 1", `setsid -f 'mousepad' "$HOME"/'a b/it'\''s.txt'`} {
		if !strings.Contains(setup, want) {
			t.Errorf("setup command lacks %q:\n%s", want, setup)
		}
	}
	if c := s.Tasks[0].CheckCommand(); c != "test -d ~/data" {
		t.Errorf("check command %q", c)
	}
}

// TestLoadEmptySuite: a folder without task files is an error.
func TestLoadEmptySuite(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no task files") {
		t.Fatalf("err = %v", err)
	}
}

// TestSetupTooLarge: inline files past the hook limit are an error of the
// task that says to use the inbox.
func TestSetupTooLarge(t *testing.T) {
	big := strings.Repeat("x", maxSetup)
	dir := writeSuite(t, map[string]string{"big.json": `{"id": "big", "instruction": "x", "config": [{"type": "file", "path": "/tmp/big", "content": "` + big + `"}],
		"evaluator": {"checks": [{"type": "command", "command": "true"}]}}`})
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Err, "put large files in the inbox") {
		t.Fatalf("problems %+v", s.Problems)
	}
}

// FuzzParse: whatever a task file holds, Parse does not panic, and a task
// it accepts has a checker, a valid id and a setup it can build.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodTask))
	f.Add([]byte(`{"id": "a", "instruction": "x", "evaluator": {"checks": [{"type": "json", "output": "a.json", "value": {"a": [1, 2.0]}}]}}`))
	f.Add([]byte(`{"id": "a", "instruction": "x", "config": [{"type": "file", "path": "~/x", "content": "\u0000"}], "evaluator": {"checks": [{"type": "command", "command": "true"}]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"id": "a"} {"id": "b"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		task, err := Parse(b)
		if err != nil {
			return
		}
		if !idPattern.MatchString(task.ID) || len(task.Evaluator.Checks) == 0 {
			t.Fatalf("accepted %+v", task)
		}
		task.SetupCommand(dir) // a missing suite file is an error, never a panic
		task.Policy()
	})
}
