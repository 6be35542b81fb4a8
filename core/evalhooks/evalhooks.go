// Package evalhooks keeps a task's hooks, the extension the evaluation
// harness (core/eval) gives tasks: a check command run in the task's VM
// after its agent stops and before the VM is released, out of the agent's
// view, and the result of that check.
//
// It owns the hooks' files: hooks.json in the task's folder (beside
// inputs/) and check.json, the check's result, in the task's session, so
// no store column is needed; the limits of a hook command; and how a check
// is run and its output bounded. (The harness's setup command is the last
// of the task's own provisioning setup commands; Hooks.Setup is only read,
// the setupCommand of a task queued before it was kept there.) It needs
// from its caller the folders (a task's, a session's) and, to run a check,
// the guest's shell (Shell, which *guest.Client satisfies). It guarantees
// that a check never runs longer than CheckTimeout (and a little grace for
// the guest to answer), that what of its output is kept is at most
// OutputCap bytes a stream and valid UTF-8, and that a task without hooks
// leaves no file behind.
package evalhooks

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
	"github.com/hivecrew/hivecrew/core/wire"
	"github.com/hivecrew/hivecrew/guestagent/protocol"
)

// Limits of hooks.
const (
	// MaxCommand bounds a hook command.
	MaxCommand = 64 << 10
	// OutputCap bounds what of a check's output is kept: the guest
	// chooses it.
	OutputCap = 4 << 10
	// SetupTimeout is the time a setup command has; CheckTimeout a check.
	SetupTimeout = 3 * time.Minute
	CheckTimeout = 2 * time.Minute

	hooksFile = "hooks.json"
	checkFile = "check.json"
)

// Hooks are a task's hook commands.
type Hooks struct {
	Setup string `json:"setup,omitempty"`
	Check string `json:"check,omitempty"`
}

// Empty reports whether h has no command.
func (h Hooks) Empty() bool { return h.Setup == "" && h.Check == "" }

// Of validates the check command of a new task and returns its hooks.
func Of(in wire.CreateTask) (Hooks, error) {
	return Hooks{Check: in.CheckCommand}, CheckCommand("checkCommand", in.CheckCommand)
}

// CheckCommand validates a hook command given as the field name: at most
// MaxCommand bytes of UTF-8 without NUL. Its error is of class invalid.
func CheckCommand(field, cmd string) error {
	switch {
	case len(cmd) > MaxCommand:
		return errdefs.Invalidf("%s is %d bytes, over the limit of %d", field, len(cmd), MaxCommand)
	case !utf8.ValidString(cmd) || strings.ContainsRune(cmd, 0):
		return errdefs.Invalidf("%s: want UTF-8 text without NUL", field)
	}
	return nil
}

// Write stores a queued task's hooks in its folder taskDir (nothing when
// it has none).
func Write(taskDir string, h Hooks) error {
	if h.Empty() {
		return nil
	}
	if err := os.MkdirAll(taskDir, 0o700); err != nil {
		return fmt.Errorf("create task folder: %w", err)
	}
	b, _ := json.Marshal(h)
	if err := os.WriteFile(filepath.Join(taskDir, hooksFile), b, 0o600); err != nil {
		return fmt.Errorf("store the task's hooks: %w", err)
	}
	return nil
}

// Read reads the hooks of the task whose folder is taskDir; a task without
// any has none.
func Read(taskDir string) (Hooks, error) {
	var h Hooks
	b, err := os.ReadFile(filepath.Join(taskDir, hooksFile))
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

// Shell runs a command in the guest; *guest.Client is one.
type Shell interface {
	Shell(ctx context.Context, p protocol.ShellParams) (protocol.ShellResult, error)
}

// Run runs a check command in the guest, bounded in time and in what of
// its output is kept.
func Run(ctx context.Context, sh Shell, command string) wire.CheckResult {
	res := wire.CheckResult{Command: command, RanAt: time.Now().UTC()}
	cctx, cancel := context.WithTimeout(ctx, CheckTimeout+10*time.Second)
	defer cancel()
	out, err := sh.Shell(cctx, protocol.ShellParams{Command: command, TimeoutSeconds: CheckTimeout.Seconds()})
	if err != nil {
		res.ExitCode, res.Error = -1, "the guest did not run it: "+err.Error()
		return res
	}
	res.ExitCode, res.TimedOut, res.Truncated = out.ExitCode, out.TimedOut, out.Truncated
	res.Stdout, res.Stderr = capText(out.Stdout, &res.Truncated), capText(out.Stderr, &res.Truncated)
	return res
}

// capText keeps the last OutputCap bytes of s (a check prints its verdict
// last), as valid UTF-8.
func capText(s string, cut *bool) string {
	if len(s) > OutputCap {
		s, *cut = s[len(s)-OutputCap:], true
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Summary says in words how a check command ended.
func Summary(r wire.CheckResult) string {
	switch {
	case r.Error != "":
		return "The check command did not run: " + r.Error
	case r.TimedOut:
		return "The check command timed out"
	}
	return fmt.Sprintf("The check command exited %d", r.ExitCode)
}

// Save records a check's result in the session folder sessionDir (its
// error is the file system's, which names the file).
func Save(sessionDir string, res wire.CheckResult) error {
	b, _ := json.Marshal(res)
	return os.WriteFile(filepath.Join(sessionDir, checkFile), b, 0o600)
}

// Load reads the check result recorded in sessionDir; an error that is
// os.ErrNotExist says no check ran there.
func Load(sessionDir string) (wire.CheckResult, error) {
	var res wire.CheckResult
	b, err := os.ReadFile(filepath.Join(sessionDir, checkFile))
	if err != nil {
		return res, fmt.Errorf("read check result: %w", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, fmt.Errorf("read check result: %w", err)
	}
	return res, nil
}
