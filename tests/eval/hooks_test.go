package eval

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/daemontest"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestHooks: a task's setup command prepares its VM before the agent
// starts (it is the last of the task's own provisioning setup commands,
// and the task says so) and its check command judges the VM after it
// stops; neither reaches the model. A check that floods its output keeps
// its last 4 KB; a setup that fails ends the task failed, saying why (its
// output, the guest's escapes shown, not acted on); a task without a
// check has no result.
func TestHooks(t *testing.T) {
	llm := llmtest.New(t)
	c, _ := start(t, llm, 2)
	ctx := context.Background()
	llm.Script("[[hooks]]", append([]llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": "cat ~/prepared.txt >> ~/seen.txt"})},
		llmtest.Done("read it")...)...)
	task, err := c.CreateTask(ctx, wire.CreateTask{Description: "Read the prepared file [[hooks]]", ToolPolicy: map[string]string{"run_shell": "allow"},
		SetupCommand: "echo SETUP-SECRET-7f3 > ~/prepared.txt",
		CheckCommand: "head -c 20000 /dev/zero | tr '\\0' x; echo; grep -q SETUP-SECRET-7f3 ~/seen.txt && echo CHECK-SAW-IT && exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if p := task.Provisioning; p == nil || len(p.SetupCommands) != 1 || p.SetupCommands[0] != (wire.SetupCommand{Command: "echo SETUP-SECRET-7f3 > ~/prepared.txt", TimeoutSeconds: 180}) {
		t.Fatalf("the task's provisioning: %+v; want its setupCommand as its setup command, with 3 minutes", p)
	}
	done := daemontest.WaitTask(t, c, task.ID, "the task's end", 2*time.Minute, func(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() })
	if done.Status != "completed" {
		t.Fatalf("the task ended %s: %s", done.Status, reason(done))
	}
	res, err := c.CheckResult(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.HasSuffix(res.Stdout, "CHECK-SAW-IT\n") || len(res.Stdout) > 4096 || !res.Truncated {
		t.Fatalf("check result: exit %d, %d bytes ending %q, truncated %v; want exit 3 after the agent read the setup's file, 4 KB kept", res.ExitCode, len(res.Stdout), tail(res.Stdout), res.Truncated)
	}
	for _, body := range llm.Requests("[[hooks]]") {
		if strings.Contains(body, "CHECK-SAW-IT") || strings.Contains(body, "echo SETUP-SECRET-7f3") {
			t.Fatalf("a hook command reached the model:\n%s", body)
		}
	}
	if len(llm.Requests("[[hooks]]")) == 0 {
		t.Fatal("the model was never asked")
	}

	failing, err := c.CreateTask(ctx, wire.CreateTask{Description: "Never starts [[setup-fails]]", SetupCommand: "echo missing fixture >&2; printf 'no \\033[2Jfixture\\n' >&2; exit 2"})
	if err != nil {
		t.Fatal(err)
	}
	done = daemontest.WaitTask(t, c, failing.ID, "the task's end", 2*time.Minute, func(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() })
	if done.Status != "failed" || !strings.HasPrefix(reason(done), "Setup command 1 of 1 failed: exit status 2") ||
		!strings.Contains(reason(done), "missing fixture\nno \\x1b[2Jfixture") {
		t.Fatalf("a failing setup: %s: %q", done.Status, reason(done))
	}
	if len(llm.Requests("[[setup-fails]]")) != 0 {
		t.Fatal("the agent of a task whose setup failed was started")
	}
	if _, err := c.CheckResult(ctx, failing.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("check result of a task without a check: %v; want not found", err)
	}
}

func reason(t wire.Task) string {
	if t.ErrorMessage != nil {
		return *t.ErrorMessage
	}
	if t.ResultSummary != nil {
		return *t.ResultSummary
	}
	return t.StatusReason
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// TestKillSwitchWinsOverHooks: a setup or check command that never ends
// (a guest that holds it up) does not stand between the user and Stop:
// cancel and stop-all end the task within 5 s, as for any task. (A cancel
// of a task whose agent had ended used to wait for its check's 2
// minutes.)
func TestKillSwitchWinsOverHooks(t *testing.T) {
	llm := llmtest.New(t)
	c, _ := start(t, llm, 2)
	ctx := context.Background()
	for _, hook := range []string{"setup", "check"} {
		for _, how := range []string{"cancel", "stop-all"} {
			marker := "[[" + hook + " " + how + "]]"
			llm.Script(marker, llmtest.Done("done")...)
			in := wire.CreateTask{Description: "Hold it " + marker}
			if hook == "setup" {
				in.SetupCommand = "echo held > ~/held; sleep 600"
			} else {
				in.CheckCommand = "echo held > ~/held; sleep 600"
			}
			task, err := c.CreateTask(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			// Wait for the setup command's start (the activity names it)
			// or the agent's end (the check announces itself only when it
			// ends), then for the hook to be well under way.
			deadline := time.Now().Add(time.Minute)
			for {
				cur, err := c.Task(ctx, task.ID)
				if err != nil {
					t.Fatal(err)
				}
				if hook == "setup" && strings.Contains(activity(c, task.ID), "Setup command 1 of 1") || hook == "check" && len(llm.Requests(marker)) >= 2 {
					break
				}
				if time.Now().After(deadline) || store.TaskStatus(cur.Status).Terminal() {
					t.Fatalf("%s %s: the task is %s before its hook ran", hook, how, cur.Status)
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(2 * time.Second)
			if cur, _ := c.Task(ctx, task.ID); store.TaskStatus(cur.Status).Terminal() || hook == "setup" && len(llm.Requests(marker)) > 0 {
				t.Fatalf("%s %s: the task is %s (the model asked %d times) while its hook should run", hook, how, cur.Status, len(llm.Requests(marker)))
			}
			begin := time.Now()
			if how == "cancel" {
				_, err = c.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionCancel})
			} else {
				_, err = c.StopAll(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := daemontest.WaitTask(t, c, task.ID, "the task's end", 5*time.Second, func(t wire.Task) bool { return store.TaskStatus(t.Status).Terminal() })
			t.Logf("%s %s: ended %s after %s", hook, how, done.Status, time.Since(begin).Round(time.Millisecond))
			if hook == "setup" && done.Status != "cancelled" {
				t.Errorf("setup %s: the task ended %s: %s; want cancelled", how, done.Status, reason(done))
			}
			if hook == "check" {
				// The agent had finished: the task keeps its outcome, and
				// its check says it was stopped.
				res, err := c.CheckResult(ctx, task.ID)
				if done.Status != "completed" || err != nil || res.ExitCode != -1 || !strings.Contains(res.Error, "stopped before it ended") {
					t.Errorf("check %s: the task ended %s, check %+v, %v; want completed with a stopped check", how, done.Status, res, err)
				}
			}
			if hook == "setup" && len(llm.Requests(marker)) > 0 {
				t.Errorf("setup %s: the agent started", how)
			}
		}
	}
}
