package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/tests/llmtest"
)

// provisionSecret is the secret variable's value the provisioning tests
// look for everywhere the helper writes or sends.
const provisionSecret = "pr0v-s3cret-token-4242"

// setProvisioning replaces the helper's provisioning, failing the test on
// an error.
func (h *helper) setProvisioning(p any) wire.Provisioning {
	h.t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		h.t.Fatal(err)
	}
	got, err := h.unix.SetProvisioning(context.Background(), b)
	if err != nil {
		h.t.Fatalf("set provisioning: %v", err)
	}
	return got
}

// TestProvisionedVariablesAndFilesReachTheGuest (issue 20) in a real
// sandbox: a variable, a secret variable, a variable of the task's
// template (by its name) and a file are provisioned, and a setup command
// runs before the agent. The model's run_shell sees the variables (the
// secret as its placeholder), the file at its guest path with its mode,
// the setup command's work and the profile that terminals source. (That
// another template's variable stays out is core/provision's unit test.) Then the secret is
// searched for in every request to the model, every event, the exports and
// every file the helper wrote but the secret store.
func TestProvisionedVariablesAndFilesReachTheGuest(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "app.conf")
	if err := os.WriteFile(src, []byte("injected contents 123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := h.setProvisioning(map[string]any{
		"environmentVariables": []map[string]any{
			{"key": "GREETING", "value": "hello-provisioned"},
			{"key": "API_TOKEN", "value": provisionSecret, "secret": true},
			{"key": "SCOPED", "value": "for-this-template", "template": "Host desktop"},
		},
		"injectedFiles": []map[string]any{{"sourcePath": src, "guestPath": "~/config/app.conf", "mode": "0600"}},
		"setupCommands": []map[string]any{{"command": `echo "setup saw $GREETING" > "$HOME/setup.txt"`, "timeoutSeconds": 30}},
	})
	if js, _ := json.Marshal(got); bytes.Contains(js, []byte(provisionSecret)) {
		t.Fatalf("PUT /provisioning answers with the secret: %s", js)
	}
	if len(got.InjectedFiles) != 1 || got.InjectedFiles[0].FileName != "app.conf" || got.InjectedFiles[0].GuestPath != "~/config/app.conf" {
		t.Fatalf("injected files: %+v", got.InjectedFiles)
	}

	const m = "[[provisioned]]"
	const look = `echo "vars:$GREETING|$API_TOKEN|$SCOPED"; cat ~/config/app.conf; stat -c 'mode:%a' ~/config/app.conf; cat ~/setup.txt; ` +
		`env -u GREETING sh -c '. "$HOME/.profile"; echo "profile:$GREETING"'; ls -A "$HIVECREW_SHARED"`
	llm.Script(m, append([]llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": look})}, llmtest.Done("Looked.")...)...)
	task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Look at the environment " + m, ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 2*time.Minute, terminal)
	h.ids.Note(done.VMID)
	if done.Status != "completed" {
		t.Fatalf("task %s %q", done.Status, summary(done))
	}
	reqs := llm.Requests(m)
	all := strings.Join(reqs, "\n")
	for _, want := range []string{`vars:hello-provisioned|[secret: provisioned API_TOKEN]|for-this-template`, `injected contents 123`, `mode:600`,
		`setup saw hello-provisioned`, `profile:hello-provisioned`} {
		if !strings.Contains(all, want) {
			i := strings.Index(all, "vars:")
			t.Errorf("the guest did not show %q: %.600s", want, all[max(0, i-50):])
		}
	}
	if strings.Contains(all, ".hivecrew-provision") {
		t.Error("the staging folder is left in the shared folder")
	}
	for i, r := range reqs {
		if strings.Contains(r, provisionSecret) {
			t.Fatalf("request %d to the model carries the secret", i)
		}
	}
	act, err := h.unix.Activity(ctx, task.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	traced := false
	for _, e := range act.Events {
		if strings.Contains(e.Data.Summary+e.Data.Details+e.Data.Reasoning, provisionSecret) {
			t.Fatalf("event %d carries the secret", e.Seq)
		}
		traced = traced || strings.Contains(e.Data.Details, "API_TOKEN=[secret: provisioned API_TOKEN]")
	}
	if !traced {
		t.Errorf("the activity does not say what was provisioned:\n%s", summaries(act.Events))
	}
	h.noSecretKept(task.ID, provisionSecret)
	if b, err := os.ReadFile(filepath.Join(home, "provisioning.json")); err != nil || !bytes.Contains(b, []byte("API_TOKEN")) {
		t.Errorf("provisioning.json was not searched: %v", err)
	}
	checkNothingLeft(t, home, ids)
}

// TestFreshVMIsProvisionedAgain: a held task whose guest hangs goes on in
// a fresh VM on resume; the fresh VM gets the file, the variables' file
// and the setup command's work too.
func TestFreshVMIsProvisionedAgain(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	src := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(src, []byte("provided notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.setProvisioning(map[string]any{
		"environmentVariables": []map[string]any{{"key": "GREETING", "value": "hello-again"}},
		"injectedFiles":        []map[string]any{{"sourcePath": src, "guestPath": "~/notes.txt"}},
		"setupCommands":        []map[string]any{{"command": `echo "setup in $(hostname)" > "$HOME/setup.txt"`}},
	})
	const look = `cat ~/notes.txt ~/setup.txt; env -u GREETING sh -c '. "$HOME/.profile"; echo "profile:$GREETING"'`
	llm.Script("[[fresh provisioned]]", append([]llmtest.Turn{
		llmtest.Tool("wait", map[string]any{"seconds": 20}),
		llmtest.Tool("run_shell", map[string]any{"command": look}),
	}, llmtest.Done("Looked in the fresh VM.")...)...)
	task, err := h.unix.CreateTask(context.Background(), wire.CreateTask{Description: "Look again [[fresh provisioned]]", ToolPolicy: map[string]string{"run_shell": "allow"}})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := h.resumeHungInFreshVM(task.ID)
	done := h.wait(task.ID, "the end", time.Minute, terminal)
	if done.Status != "completed" {
		t.Fatalf("after the resume: %s %q", done.Status, summary(done))
	}
	h.noSandboxesOf([]string{old}, 5*time.Second)
	reqs := llm.Requests("[[fresh provisioned]]")
	last := strings.Join(reqs[len(reqs)-2:], "\n")
	for _, want := range []string{"provided notes", "setup in ", "profile:hello-again"} {
		if !strings.Contains(last, want) {
			t.Errorf("the fresh VM lacks %q", want)
		}
	}
	h.stop()
	checkNothingLeft(t, home, ids)
}

// TestTaskProvisioningAddsToTheConfigured: a task's own variables and setup
// command (POST /tasks' provisioning) come on top of the configured ones,
// its variable replacing a configured one of the same name; the task
// shows them, and a rerun gets them again.
func TestTaskProvisioningAddsToTheConfigured(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	h.setProvisioning(map[string]any{
		"environmentVariables": []map[string]any{{"key": "GREETING", "value": "configured"}, {"key": "KEPT", "value": "configured-kept"}},
		"setupCommands":        []map[string]any{{"command": `echo configured-setup > "$HOME/order.txt"`}},
	})
	const m = "[[task provisioning]]"
	script := func() {
		llm.Script(m, append([]llmtest.Turn{llmtest.Tool("run_shell", map[string]any{"command": `echo "vars:$GREETING|$KEPT|$TASK_ONLY"; cat ~/order.txt`})},
			llmtest.Done("Looked.")...)...)
	}
	check := func(id string) {
		t.Helper()
		done := h.wait(id, "the end", 2*time.Minute, terminal)
		h.ids.Note(done.VMID)
		if done.Status != "completed" {
			t.Fatalf("task %s %q", done.Status, summary(done))
		}
		all := strings.Join(llm.Requests(m), "\n")
		for _, want := range []string{"vars:from the task|configured-kept|task-only", `configured-setup\\ntask-setup`} {
			if !strings.Contains(all, want) {
				t.Errorf("the guest did not show %q", want)
			}
		}
	}
	script()
	task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Look " + m, ToolPolicy: map[string]string{"run_shell": "allow"},
		Provisioning: &wire.TaskProvisioning{Environment: map[string]string{"GREETING": "from the task", "TASK_ONLY": "task-only"},
			SetupCommands: []wire.SetupCommand{{Command: `echo task-setup >> "$HOME/order.txt"`, TimeoutSeconds: 30}}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := task.Provisioning; p == nil || p.Environment["TASK_ONLY"] != "task-only" || len(p.SetupCommands) != 1 {
		t.Fatalf("the task's provisioning: %+v", p)
	}
	check(task.ID)
	script()
	again, err := h.unix.TaskAction(ctx, task.ID, wire.TaskAction{Action: wire.ActionRerun})
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, again.Provisioning) != mustJSON(t, task.Provisioning) {
		t.Fatalf("the rerun's provisioning: %s", mustJSON(t, again.Provisioning))
	}
	check(again.ID)
	h.stop()
	checkNothingLeft(t, home, ids)
}

// TestFailingSetupCommandFailsTheTask (issue 20): the second of three
// setup commands exits 7. The task fails before the model is asked
// anything, its result names the command and shows its output (the secret
// it echoes redacted), the third command never runs, and no VM is left.
// Bad provisioning is refused whole: the stored one stays as it was.
func TestFailingSetupCommandFailsTheTask(t *testing.T) {
	home, ids := newHome(t)
	h := startInProc(t, home, ids)
	llm := llmtest.New(t)
	h.setup(llm.URL, 1)
	ctx := context.Background()
	h.setProvisioning(map[string]any{
		"environmentVariables": []map[string]any{{"key": "API_TOKEN", "value": provisionSecret, "secret": true}},
		"setupCommands": []map[string]any{
			{"command": "echo first-ok > \"$HIVECREW_SHARED/outbox/first.txt\""},
			{"command": `echo "installing with $API_TOKEN"; echo "no such package: frobnicate" >&2; exit 7`},
			{"command": "touch \"$HIVECREW_SHARED/outbox/third.txt\""},
		},
	})
	const m = "[[setup fails]]"
	llm.Script(m, llmtest.Done("Should never be asked.")...)
	task, err := h.unix.CreateTask(ctx, wire.CreateTask{Description: "Anything " + m})
	if err != nil {
		t.Fatal(err)
	}
	done := h.wait(task.ID, "the end", 2*time.Minute, terminal)
	h.ids.Note(done.VMID)
	s := summary(done)
	if done.Status != "failed" {
		t.Fatalf("task %s %q", done.Status, s)
	}
	for _, want := range []string{"Setup command 2 of 3 failed: exit status 7", "exit 7", "installing with [secret: provisioned API_TOKEN]", "no such package: frobnicate"} {
		if !strings.Contains(s, want) {
			t.Errorf("the result lacks %q: %q", want, s)
		}
	}
	if strings.Contains(s, provisionSecret) {
		t.Error("the result carries the secret")
	}
	if n := len(llm.Requests(m)); n != 0 {
		t.Errorf("the model was asked %d time(s) after a failed setup", n)
	}
	files, err := h.unix.TaskFiles(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, f := range files.OutputFiles {
		outs = append(outs, f.Name)
	}
	if strings.Join(outs, ",") != "first.txt" {
		t.Errorf("outputs %v: want the first command's only", outs)
	}
	h.noSandboxesOf(ids.List(), 10*time.Second)

	// A bad replacement is refused as a whole.
	before, err := h.unix.Provisioning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"a reserved name":                `{"environmentVariables":[{"key":"PATH","value":"/evil"}]}`,
		"a relative path":                `{"injectedFiles":[{"sourcePath":"/etc/hostname","guestPath":"config/x"}]}`,
		"a wrong type":                   `{"setupCommands":[{"command":"true","timeoutSeconds":"10"}]}`,
		"a new secret without its value": `{"environmentVariables":[{"key":"NEW_SECRET","secret":true}]}`,
		"an unknown template":            `{"setupCommands":[{"command":"true","template":"no-such-template"}]}`,
	} {
		if _, err := h.unix.SetProvisioning(ctx, json.RawMessage(bad)); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	after, err := h.unix.Provisioning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, a := mustJSON(t, before), mustJSON(t, after); b != a || !strings.Contains(a, "exit 7") {
		t.Errorf("a refused replacement changed the provisioning:\n%s\n%s", b, a)
	}
	h.stop()
	checkNothingLeft(t, home, ids)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
