package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// TestShellTimeoutIsClampedInTheSandbox answers issue 34.12 in a real
// sandbox: run_shell with timeoutSeconds 1e12 (whose nanoseconds overflow
// an int64, to a negative timeout that ended the command at once) runs the
// command with the longest timeout, and the model is told so.
func TestShellTimeoutIsClampedInTheSandbox(t *testing.T) {
	home, ids := newHome(t)
	h := startProcess(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	const marker = "[[shell timeout]]"
	llm.Script(marker, append([]llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": "sleep 0.5; echo ran", "timeoutSeconds": 1e12})},
		llmtest.Done("Ran it.")...)...)
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Run it " + marker, ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	if done := h.wait(task.ID, "the task's end", 2*time.Minute, terminal); done.Status != "completed" {
		t.Fatalf("the task ended %s: %q", done.Status, summary(done))
	}
	reqs := llm.Requests(marker)
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := toolMessage(reqs[1])
	for _, want := range []string{`\"exitCode\":0`, `ran\\n`, "Note: timeoutSeconds 1e+12 is over the limit of 3600; the command ran with a limit of 3600 seconds."} {
		if !strings.Contains(got, want) {
			t.Errorf("the run_shell result the model got lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "timedOut") {
		t.Errorf("the command timed out: %s", got)
	}
}

// toolMessage is the first tool message of a chat request's body.
func toolMessage(body string) string {
	_, after, _ := strings.Cut(body, `{"role":"tool"`)
	msg, _, _ := strings.Cut(after, `"tool_call_id"`)
	return msg
}
