package eval

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/eval"
)

// cli runs the hivecrew binary on home and returns its exit code and
// output.
func cli(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "hivecrew"), append([]string{"--home", home}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestCLI: `hivecrew eval run` runs the chosen tasks on two models with a
// line per result and a summary, keeps the run under the data folder, and
// `hivecrew eval report` writes the latest run's report; bad flags are
// usage errors.
func TestCLI(t *testing.T) {
	s, err := eval.Load(starter)
	if err != nil {
		t.Fatal(err)
	}
	_, home := start(t, scripted(t, s), 2)
	code, out, errOut := cli(t, home, "eval", "run", starter, "--provider", "Scripted", "--model", oracle, "--model", null,
		"--only", "sort-lines,rename-draft", "--parallel", "2")
	if code != 0 {
		t.Fatalf("eval run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"✓ sort-lines (oracle): passed", "✓ rename-draft (oracle): passed",
		"✗ sort-lines (null): checker failed: output sorted.txt: not in the task's outputs", "✗ rename-draft (null): checker failed: the check command exited 1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut)
		}
	}
	for _, want := range []string{"oracle: 2/2 passed (100%, 95% interval 34–100%)", "null: 0/2 passed (0%, 95% interval 0–66%)", "Evals/"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	report := filepath.Join(t.TempDir(), "report.html")
	if code, out, errOut := cli(t, home, "eval", "report", "-o", report); code != 0 || !strings.Contains(out, "Wrote "+report) {
		t.Fatalf("eval report: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(b), "2/2 · 100%") || !strings.Contains(string(b), "/replay") {
		t.Fatalf("report: %v\n%s", err, b)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"eval", "run", starter, "--model", "m"}, 2, "eval run needs --provider"},
		{[]string{"eval", "run", starter, "--provider", "Scripted"}, 2, "at least one --model"},
		{[]string{"eval", "run", starter, "--provider", "Scripted", "--model", "m", "--repeat", "0"}, 2, "--repeat takes 1 to 100"},
		{[]string{"eval", "run", starter, "--provider", "Scripted", "--model", "m", "--only", "nope"}, 1, "no task nope in suite linux-desktop"},
		{[]string{"eval", "run", t.TempDir(), "--provider", "Scripted", "--model", "m"}, 1, "no task files"},
		{[]string{"eval", "report", "no-such-run"}, 1, "read run"},
	} {
		code, _, errOut := cli(t, home, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.want)
		}
	}
}
