// Package readme runs the README's first-hour walkthrough as a new user
// would (issue 18): every command of the block marked <!-- walkthrough -->,
// in order, with the binaries built from this tree, on a fresh data
// directory, a real helper (started by the first command) and real
// sandboxes, with a scripted provider standing in for OpenAI. A command
// that fails fails the test: the README cannot promise what does not work.
package readme

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

var bin string

func TestMain(m *testing.M) { helperproc.Main(m, &bin) }

// walkthrough returns the commands of the README's walkthrough block.
func walkthrough(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- walkthrough -->\n```sh\n")
	if !ok {
		t.Fatal("README.md has no <!-- walkthrough --> block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the walkthrough block does not end")
	}
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("the walkthrough has %d commands", len(cmds))
	}
	return cmds
}

var taskID = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)

func TestREADMEWalkthrough(t *testing.T) {
	llm := llmtest.New(t)
	llm.Models = []string{"gpt-4.1", "gpt-4.1-mini"}
	llm.Script("Summarise the PDF", append([]llmtest.Turn{
		llmtest.Tool("write_file", map[string]any{"path": "outbox/summary.md", "contents": "# Summary\n\nA short report.\n"}),
	}, llmtest.Done("Wrote outbox/summary.md.")...)...)
	user := t.TempDir() // the user's home: ~/report.pdf is there
	data := filepath.Join(t.TempDir(), "hivecrew")
	if err := os.WriteFile(filepath.Join(user, "report.pdf"), []byte("%PDF-1.4\n% a report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir() // where the user types the commands
	if err := os.Symlink(bin, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+user, "HIVECREW_HOME="+data)
	t.Cleanup(func() {
		// The helper the CLI started: stopped, and gone (its VMs' disks
		// unmounted) before the temporary folders are removed.
		stop := exec.Command(filepath.Join(bin, "hivecrew-helper"), "stop", "--home", data)
		stop.Env = env
		stop.CombinedOutput()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			running := false
			for _, p := range helperproc.All() {
				running = running || strings.Contains(p.Cmdline, "serve --home "+data)
			}
			if !running {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Error("the helper the walkthrough started did not stop")
	})
	id := ""
	for i, cmd := range walkthrough(t) {
		line := strings.NewReplacer("https://api.openai.com/v1", llm.URL, "sk-...", "sk-walkthrough", " ID", " "+id).Replace(cmd)
		if strings.Contains(cmd, " ID") && id == "" {
			t.Fatalf("command %d (%s) names a task before any run", i+1, cmd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		c := exec.CommandContext(ctx, "sh", "-c", line)
		c.Dir, c.Env = work, env
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		start := time.Now()
		err := c.Run()
		cancel()
		t.Logf("$ %s  (%s)\n%s%s", cmd, time.Since(start).Round(time.Millisecond), clip(out.String()), clip(errOut.String()))
		if err != nil {
			t.Fatalf("README command %d failed (%v): %s\nstdout:\n%s\nstderr:\n%s", i+1, err, cmd, out.String(), errOut.String())
		}
		if strings.Contains(cmd, " run ") {
			m := taskID.FindString(out.String())
			if m == "" {
				t.Fatalf("`%s` printed no task id:\n%s", cmd, out.String())
			}
			id = m
		}
	}
	if len(llm.Requests("Summarise the PDF")) < 3 {
		t.Error("the walkthrough's task did not run its script")
	}
	saved, err := filepath.Glob(filepath.Join(user, "Downloads", "Hivecrew", "*", "summary.md"))
	if err != nil || len(saved) != 1 {
		t.Errorf("the summary was not saved in ~/Downloads/Hivecrew: %v %v", saved, err)
	}
}

func clip(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…\n"
	}
	return s
}
