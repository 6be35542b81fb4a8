package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TestProvisionCommands: a YAML file sets a variable, a secret read from
// the file, a file and a setup command; show lists them with the secret as
// "(secret)" and --json never carries its value; bad input (a reserved
// name, a wrong type, a path that is not clean, a file that is neither
// JSON nor YAML, a missing file) is refused in words and changes nothing;
// so is a bad run --env or --setup, with or without input files.
func TestProvisionCommands(t *testing.T) {
	t.Parallel()
	h := startHelper(t)
	h.scripted("[[never run]]") // a provider, so that a bad run fails on its provisioning
	const secret = "cli-secret-value-77"
	dir := t.TempDir()
	conf := filepath.Join(dir, "provision.yaml")
	src := filepath.Join(dir, "app.conf")
	os.WriteFile(src, []byte("x"), 0o644)
	yaml := "environmentVariables:\n  - key: GREETING\n    value: hello\n  - key: API_TOKEN\n    value: " + secret + "\n    secret: true\n" +
		"injectedFiles:\n  - sourcePath: " + src + "\n    guestPath: ~/.config/app.conf\n    mode: \"0600\"\n" +
		"setupCommands:\n  - command: pip install requests\n    timeoutSeconds: 120\n    template: host\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.ok("provision", "set", conf); !strings.Contains(r.stdout, "Provisioning replaced: 2 variable(s), 1 file(s), 1 setup command(s).") {
		t.Fatalf("set: %s", r)
	}
	show := h.ok("provision", "show").stdout
	for _, want := range []string{"GREETING=hello  [all templates]", "API_TOKEN=(secret)  [all templates]",
		src + " -> ~/.config/app.conf (0600)  [all templates]", "1. pip install requests  [template host, timeout 120s]"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	js := h.ok("provision", "show", "--json").stdout
	var p wire.Provisioning
	decodeOne(t, js, &p)
	if strings.Contains(show+js, secret) || len(p.EnvironmentVariables) != 2 || !p.EnvironmentVariables[1].Secret || p.InjectedFiles[0].FileName != "app.conf" {
		t.Fatalf("show --json: %s", js)
	}

	bad := func(name, contents string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(contents), 0o600)
		return path
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"provision", "set", bad("reserved.json", `{"environmentVariables":[{"key":"PATH","value":"/x"}]}`)}, "PATH is set by the VM's session or the helper"},
		{[]string{"provision", "set", bad("type.yaml", "setupCommands:\n  - command: true\n")}, `field "setupCommands.command" has the wrong type`},
		{[]string{"provision", "set", bad("path.json", `{"injectedFiles":[{"sourcePath":"`+src+`","guestPath":"~/../etc/x"}]}`)}, "a clean path under ~/"},
		{[]string{"provision", "set", bad("junk.txt", "{not: [json")}, "neither JSON nor YAML"},
		{[]string{"provision", "set", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"provision", "set"}, "provision set"},
		{[]string{"provision", "set", bad("template.json", `{"setupCommands":[{"command":"true","template":"dev"}]}`)}, `there is no template "dev" (the templates: Host desktop)`},
		// A task's own provisioning: refused before a task exists (the
		// fake VMs of these tests must never run one).
		{[]string{"run", "Look.", "--env", "NOEQUALS"}, `--env takes NAME=VALUE, not "NOEQUALS"`},
		{[]string{"run", "Look.", "--env", "1BAD=x"}, `key "1BAD" is not a variable name`},
		{[]string{"run", "Look.", "--env", "HOME=/x"}, "HOME is set by the VM's session or the helper"},
		{[]string{"run", "Look.", "--setup", "  "}, "setupCommands[0]: the command is empty"},
		{[]string{"run", "Look.", "--file", src, "--env", "1BAD=x"}, `key "1BAD" is not a variable name`},
	} {
		if r := h.cli(c.args...); r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: %s", c.args, r)
		}
	}
	if again := h.ok("provision", "show", "--json").stdout; again != js {
		t.Fatalf("bad input changed the provisioning:\n%s\n%s", js, again)
	}
	if ls := h.ok("ls", "--all").stdout; !strings.Contains(ls, "No tasks") {
		t.Fatalf("a refused run made a task:\n%s", ls)
	}
}
