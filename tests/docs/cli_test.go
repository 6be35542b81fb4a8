package docs

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIReferenceNamesEveryCommand: every command `hivecrew help` lists
// (the CLI built from this tree) is in docs/cli.md's reference, so a new
// command cannot ship undocumented.
func TestCLIReferenceNamesEveryCommand(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hivecrew")
	build := exec.Command("go", "build", "-o", bin, "./app")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./app: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("hivecrew help: %v\n%s", err, out)
	}
	_, list, ok := strings.Cut(string(out), "\ncommands:\n")
	if !ok {
		t.Fatalf("hivecrew help lists no commands:\n%s", out)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	ref := read(t, "docs/cli.md")
	n := 0
	for _, line := range strings.Split(list, "\n") {
		cmd := strings.Fields(line)
		if len(cmd) == 0 || cmd[0] == "help" {
			continue
		}
		n++
		// "hivecrew CMD", or CMD as an alternative after " | " on a hivecrew line.
		named := regexp.MustCompile(`(?m)^hivecrew (.*[| ])?` + regexp.QuoteMeta(cmd[0]) + `\b`)
		if !named.MatchString(ref) {
			t.Errorf("docs/cli.md does not show `hivecrew %s` (%s)", cmd[0], strings.Join(cmd[1:], " "))
		}
	}
	if n < 20 {
		t.Errorf("hivecrew help listed %d commands:\n%s", n, list)
	}
}
