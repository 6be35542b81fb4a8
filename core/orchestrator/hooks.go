package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/pool"
	"github.com/hivecrew/hivecrew/core/store"
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// A task's hooks (extension for the evaluation harness, core/eval): a
// check command run in its VM after the agent stops and before the VM is
// released, out of the agent's view. It lives in the task's folder
// (hooks.json beside inputs/), its result in the task's session
// (check.json), so no store column is needed. (The harness's setup
// command is the last of the task's own provisioning setup commands:
// taskProvisioning.)
const (
	maxHookCommand = 64 << 10
	// hookOutputCap bounds what of a hook's output is kept: the guest
	// chooses it.
	hookOutputCap = 4 << 10
	setupTimeout  = 3 * time.Minute
	checkTimeout  = 2 * time.Minute
	hooksFile     = "hooks.json"
	checkFile     = "check.json"
)

// hooks are a task's hook commands. Setup is only read: the setupCommand
// of a task queued before it became a provisioning setup command, run as
// its last one.
type hooks struct {
	Setup string `json:"setup,omitempty"`
	Check string `json:"check,omitempty"`
}

func (h hooks) empty() bool { return h.Setup == "" && h.Check == "" }

// checkHooks validates the check command of a new task.
func checkHooks(in wire.CreateTask) (hooks, error) {
	return hooks{Check: in.CheckCommand}, checkHook("checkCommand", in.CheckCommand)
}

// checkHook validates a hook command given as the field name.
func checkHook(name, cmd string) error {
	switch {
	case len(cmd) > maxHookCommand:
		return errdefs.Invalidf("%s is %d bytes, over the limit of %d", name, len(cmd), maxHookCommand)
	case !utf8.ValidString(cmd) || strings.ContainsRune(cmd, 0):
		return errdefs.Invalidf("%s: want UTF-8 text without NUL", name)
	}
	return nil
}

// writeHooks stores a queued task's hooks in its folder.
func (o *Orchestrator) writeHooks(taskID string, h hooks) error {
	if h.empty() {
		return nil
	}
	if err := os.MkdirAll(o.taskDir(taskID), 0o700); err != nil {
		return fmt.Errorf("create task folder: %w", err)
	}
	b, _ := json.Marshal(h)
	if err := os.WriteFile(filepath.Join(o.taskDir(taskID), hooksFile), b, 0o600); err != nil {
		return fmt.Errorf("store the task's hooks: %w", err)
	}
	return nil
}

// readHooks reads a task's hooks; a task without any has none.
func (o *Orchestrator) readHooks(taskID string) (hooks, error) {
	var h hooks
	b, err := os.ReadFile(filepath.Join(o.taskDir(taskID), hooksFile))
	if errors.Is(err, os.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("read the task's hooks: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("read the task's hooks: %w", err)
	}
	return h, nil
}

// runCheck runs a check command in the lease's guest, bounded in time
// and in what of its output is kept.
func runCheck(ctx context.Context, lease *pool.Lease, command string) wire.CheckResult {
	res := wire.CheckResult{Command: command, RanAt: time.Now().UTC()}
	cctx, cancel := context.WithTimeout(ctx, checkTimeout+10*time.Second)
	defer cancel()
	out, err := lease.Guest().Shell(cctx, protocol.ShellParams{Command: command, TimeoutSeconds: checkTimeout.Seconds()})
	if err != nil {
		res.ExitCode, res.Error = -1, "the guest did not run it: "+err.Error()
		return res
	}
	res.ExitCode, res.TimedOut, res.Truncated = out.ExitCode, out.TimedOut, out.Truncated
	res.Stdout, res.Stderr = capText(out.Stdout, &res.Truncated), capText(out.Stderr, &res.Truncated)
	return res
}

// capText keeps the last hookOutputCap bytes of s (a check prints its
// verdict last), as valid UTF-8.
func capText(s string, cut *bool) string {
	if len(s) > hookOutputCap {
		s, *cut = s[len(s)-hookOutputCap:], true
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// checkSummary says in words how a check command ended.
func checkSummary(r wire.CheckResult) string {
	switch {
	case r.Error != "":
		return "The check command did not run: " + r.Error
	case r.TimedOut:
		return "The check command timed out"
	}
	return fmt.Sprintf("The check command exited %d", r.ExitCode)
}

// checkVM runs a task's check command after its agent stopped, records
// the result in its session and says so in the outcome's events. A
// cancel or the kill switch ends it at once (the task keeps the agent's
// outcome; the result says the check was stopped).
func (o *Orchestrator) checkVM(r *run, h hooks, lease *pool.Lease, sessionDir string, out *outcome) {
	if h.Check == "" || lease == nil || r.ctx.Err() != nil || !lease.Guest().Healthy() {
		return
	}
	ctx, stop := r.hookContext()
	defer stop()
	res := runCheck(ctx, lease, h.Check)
	if ctx.Err() != nil {
		res.ExitCode, res.Error = -1, "stopped before it ended: the task was cancelled or the kill switch was used"
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(sessionDir, checkFile), b, 0o600); err != nil {
		res.Error = "could not record the result: " + err.Error()
	}
	out.events = append(out.events, store.Event{Type: "status_change", ActivityType: "info", Summary: checkSummary(res)})
}

// hookContext is the context of a hook command: it ends with the run, or
// when stopHooks is called (before or while it runs).
func (r *run) hookContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hooksStopped {
		cancel()
	}
	r.hookStop = cancel
	return ctx, cancel
}

// stopHooks ends the run's hook command under way, and any it would
// start: a cancel of a task whose agent has ended.
func (r *run) stopHooks() {
	r.mu.Lock()
	r.hooksStopped = true
	stop := r.hookStop
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// CheckResult returns the result of a task's check command; a task whose
// check has not run is not found.
func (o *Orchestrator) CheckResult(ctx context.Context, id string) (wire.CheckResult, error) {
	var res wire.CheckResult
	t, err := o.cfg.Store.GetTask(ctx, id)
	if err != nil {
		return res, err
	}
	if t.SessionID == "" {
		return res, errdefs.NotFoundf("task %s has no check result: it has not run", id)
	}
	b, err := os.ReadFile(filepath.Join(o.cfg.Paths.Session(t.SessionID), checkFile))
	if errors.Is(err, os.ErrNotExist) {
		return res, errdefs.NotFoundf("task %s has no check result (no checkCommand, or its VM was gone when the agent stopped)", id)
	}
	if err != nil {
		return res, fmt.Errorf("read check result: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("read check result: %w", err)
	}
	return res, nil
}
