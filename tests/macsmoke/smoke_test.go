// Package macsmoke runs scripts/mac-smoke, the macOS acceptance test a Mac
// user runs, off a Mac (HIVECREW_SMOKE_OFF_MAC=1): its portable checks
// (build, a helper in a fresh data folder, the provider, a task with an
// output, takeover and hand-back, cancel, the kill switch, helper stop)
// run for real against the host template and a scripted provider, and
// every Mac-only check must say "NOT RUN" rather than pass. It proves the
// script works; it proves nothing about a Mac.
package macsmoke

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/helperproc"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

func TestMacSmokeRunsOffAMac(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "mac-smoke")

	// Without the override it refuses, saying why, and lists its checks.
	out, err := exec.Command(script).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "needs a Mac") || !strings.Contains(string(out), "warm-restore") {
		t.Fatalf("mac-smoke on Linux without the override: %v\n%s", err, out)
	}

	llm := llmtest.New(t)
	smokeScript := func() {
		llm.Script("smoke.txt", append([]llmtest.Turn{llmtest.Tool("write_file", map[string]any{"path": "/mnt/shared/outbox/smoke.txt", "contents": "hivecrew smoke\n"})}, llmtest.Done("Saved smoke.txt.")...)...)
	}
	smokeScript()
	slow := llmtest.Tool("wait", map[string]any{"seconds": 1})
	slow.Repeat = true
	llm.Script("Special:Random", slow)

	cmd := exec.Command(script, "--base-url", llm.URL, "--model", "scripted", "--template", "host", "--unattended")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HIVECREW_SMOKE_OFF_MAC=1", "SMOKE_KEY=sk-test", "TMPDIR="+t.TempDir()+"/") // as macOS sets it, with a trailing slash
	cmd.Args = append(cmd.Args, "--api-key-env", "SMOKE_KEY")
	started := time.Now()
	out, err = cmd.CombinedOutput()
	t.Logf("mac-smoke took %s:\n%s", time.Since(started).Round(time.Second), out)
	if err != nil {
		t.Fatalf("mac-smoke failed off a Mac: %v", err)
	}
	table := map[string]string{}
	row := regexp.MustCompile(`(?m)^([a-z-]+)\s+(PASS|FAIL|NOT RUN)\b`)
	for _, m := range row.FindAllStringSubmatch(string(out), -1) {
		table[m[1]] = m[2]
	}
	for _, id := range []string{"build", "helper", "template", "provider", "task", "vm-cleanup", "takeover", "cancel", "stop-all", "hotkey-rule", "stop-helper"} {
		if table[id] != "PASS" {
			t.Errorf("portable check %s: %q, want PASS", id, table[id])
		}
	}
	for _, id := range []string{"platform", "sdk", "check-darwin", "entitlement", "bundle", "psn", "app-front", "warm-restore", "vsock-fds", "logout",
		"menu-bar", "notification", "notify-front", "notify-open", "paste", "confirm", "file-picker", "new-window", "kill-hotkey",
		"unattended", "grants", "typing", "settle"} {
		if table[id] != "NOT RUN" {
			t.Errorf("Mac-only check %s: %q off a Mac, want NOT RUN", id, table[id])
		}
	}
	if len(table) != 34 {
		t.Errorf("the table has %d rows, want 34: %v", len(table), table)
	}
	if n := len(llm.Requests("smoke.txt")); n == 0 {
		t.Error("the smoke task never reached the provider")
	}

	// --home: on a data folder of the user's, with a task and a provider
	// of theirs, the smoke passes and leaves only what was there.
	home := t.TempDir()
	bin := filepath.Join(root, "bin")
	h := helperproc.Start(t, bin, home)
	ctx := context.Background()
	name, url, key, model := "Mine", llm.URL, "sk-mine", "scripted"
	if _, err := h.Unix.AddProvider(ctx, wire.ProviderInput{DisplayName: &name, BaseURL: &url, APIKey: &key, DefaultModelID: &model}); err != nil {
		t.Fatal(err)
	}
	mine, err := h.Unix.CreateTask(ctx, wire.CreateTask{Description: "A task of the user's", ProviderName: "Mine", ModelID: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got, err := h.Unix.Task(ctx, mine.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user's task is %s after a minute", got.Status)
		}
	}
	if err := h.Term(helperproc.StopTimeout); err != nil {
		t.Fatal(err)
	}
	smokeScript() // the first run used its turns
	cmd = exec.Command(script, "--base-url", llm.URL, "--model", "scripted", "--template", "host", "--unattended", "--api-key-env", "SMOKE_KEY", "--home", home)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HIVECREW_SMOKE_OFF_MAC=1", "SMOKE_KEY=sk-test", "TMPDIR="+t.TempDir())
	out, err = cmd.CombinedOutput()
	t.Logf("mac-smoke --home:\n%s", out)
	if err != nil {
		t.Fatalf("mac-smoke --home failed: %v", err)
	}
	h = helperproc.Start(t, bin, home)
	list, err := h.Unix.ListTasks(ctx, client.TaskQuery{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.Items(); len(items) != 1 || items[0].ID != mine.ID {
		t.Errorf("after mac-smoke --home the folder holds tasks %+v; want only the user's", items)
	}
	ps, err := h.Unix.Providers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].DisplayName != "Mine" {
		t.Errorf("after mac-smoke --home the folder holds providers %+v; want only the user's", ps)
	}
}
