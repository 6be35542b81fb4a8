package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/provision"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
)

// A task's setupCommand is the last of its own setup commands, with 3
// minutes; one too large or not text is refused by its field's name. A
// task queued before (its setup in hooks.json) still has it run, last.
func TestSetupCommandIsProvisioning(t *testing.T) {
	p, err := taskProvisioning(&wire.TaskProvisioning{SetupCommands: []wire.SetupCommand{{Command: "echo first"}}}, "echo eval-setup")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.TaskSetupCommand{{Command: "echo first"}, {Command: "echo eval-setup", TimeoutSeconds: 180}}
	if len(p.SetupCommands) != 2 || p.SetupCommands[0] != want[0] || p.SetupCommands[1] != want[1] {
		t.Fatalf("setup commands %+v; want %+v", p.SetupCommands, want)
	}
	if p, err := taskProvisioning(nil, "  \n"); p != nil || err != nil {
		t.Fatalf("a blank setupCommand: %+v, %v; want none", p, err)
	}
	for _, bad := range []string{strings.Repeat("x", 64<<10+1), "a\x00b", "\xff"} {
		if _, err := taskProvisioning(nil, bad); err == nil || !strings.Contains(err.Error(), "setupCommand") {
			t.Errorf("setupCommand %.20q: %v; want an error naming setupCommand", bad, err)
		}
	}

	o := &Orchestrator{cfg: Config{Paths: config.Paths{Home: t.TempDir()}}}
	os.MkdirAll(o.taskDir("old"), 0o700)
	os.WriteFile(filepath.Join(o.taskDir("old"), "hooks.json"), []byte(`{"setup":"echo legacy","check":"true"}`), 0o600)
	h, err := o.readHooks("old")
	if err != nil {
		t.Fatal(err)
	}
	task := store.Task{Provisioning: &store.TaskProvisioning{SetupCommands: []store.TaskSetupCommand{{Command: "echo own"}}}}
	plan, err := o.provisionPlan(task, store.Template{ID: "t"}, h.Setup)
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := []provision.Command{{Command: "echo own", Timeout: provision.DefaultTimeout}, {Command: "echo legacy", Timeout: 3 * time.Minute}}
	if len(plan.Commands) != 2 || plan.Commands[0] != wantPlan[0] || plan.Commands[1] != wantPlan[1] || h.Check != "true" {
		t.Fatalf("plan %+v, check %q; want %+v and the check kept", plan.Commands, h.Check, wantPlan)
	}
}
