package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Plan statuses of the API.
const (
	statusPlanning   = "planning"
	statusPlanReview = "planReview"
	statusPlanFailed = "planFailed"
)

// maxPlanBytes bounds a plan read from a file, stdin or the editor.
const maxPlanBytes = 1 << 20

// cmdPlan: hivecrew plan show|approve|edit|revise|cancel ID
func cmdPlan(e *env, args []string) error {
	return runTable(e, "plan", []command{
		{"show", "ID", "print a plan-first task's plan and status", planShow},
		{"approve", "ID", "run the task with the plan under review", planApprove},
		{"edit", "ID [--file F]", "replace the plan under review and run the task (from F, stdin or $EDITOR)", planEdit},
		{"revise", `ID "<what to change>"`, "ask the model to rewrite the plan under review as you say (review it again after)", planRevise},
		{"cancel", "ID", "cancel a task that is planning or whose plan is under review", planCancel},
	}, args)
}

func planShow(e *env, args []string) error {
	_, t, err := e.taskNow(args, e.flags())
	if err != nil {
		return err
	}
	if !t.PlanFirst {
		return errdefs.Invalidf("task %s is not a plan-first task (run it with --plan-first to review a plan)", shortID(t.ID))
	}
	if e.json {
		return e.printJSON(t)
	}
	status := stateAndReason(t)
	plan := ""
	if t.PlanMarkdown != nil {
		plan = *t.PlanMarkdown
	}
	fs := []field{{"Task", t.ID}, {"Title", t.Title}, {"Status", status}}
	switch t.Status {
	case statusPlanning:
		plan = "(the model is writing it)"
	case statusPlanFailed:
		if t.ResultSummary != nil {
			fs = append(fs, field{"Reason", *t.ResultSummary})
		}
	}
	fs = append(fs, field{"Plan", or(plan, "(none)")})
	if t.Status == statusPlanReview {
		fs = append(fs, field{"Next", planNext(t.ID)})
	}
	fields(e.stdout, fs...)
	return nil
}

// planNext says how to review a plan from the command line.
func planNext(id string) string {
	s := shortID(id)
	return fmt.Sprintf("hivecrew plan approve %s   run it as it is\nhivecrew plan edit %s      change it, then run it\n"+
		"hivecrew plan revise %s \"…\"  ask the model for changes\nhivecrew plan cancel %s    cancel the task", s, s, s, s)
}

func planApprove(e *env, args []string) error {
	return e.printTaskState(e.taskAction(args, wire.ActionApprovePlan))
}

func planRevise(e *env, args []string) error {
	fs := e.flags()
	pos, err := e.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || strings.TrimSpace(joinArgs(pos[1:])) == "" {
		return e.bad(fs, `plan revise needs a task and what to change: hivecrew plan revise ID "also save a PDF"`)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	id, err := e.taskID(c, pos[0])
	if err != nil {
		return err
	}
	t, err := c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionRevisePlan, Instructions: joinArgs(pos[1:])})
	if errors.Is(err, errdefs.ErrConflict) {
		if cur, gerr := c.Task(e.ctx, id); gerr == nil && cur.Status != statusPlanReview {
			return planConflict(cur, "revise the plan of")
		}
	}
	return e.printTaskState(t, err)
}

func planCancel(e *env, args []string) error {
	return e.printTaskState(e.taskAction(args, wire.ActionCancelPlan))
}

func planEdit(e *env, args []string) error {
	fs := e.flags()
	file := fs.String("file", "", "read the new plan from `F` (\"-\": stdin); default: stdin when it is not a terminal, else $EDITOR")
	c, t, err := e.taskNow(args, fs)
	if err != nil {
		return err
	}
	id := t.ID
	if t.Status != statusPlanReview {
		return planConflict(t, "edit the plan of")
	}
	current := ""
	if t.PlanMarkdown != nil {
		current = *t.PlanMarkdown
	}
	plan, err := readPlan(e.ctx, *file, os.Stdin, stdinIsTerminal(), os.Getenv("VISUAL"), os.Getenv("EDITOR"), current)
	if err != nil {
		return err
	}
	if plan == strings.TrimSpace(current) {
		return errdefs.Invalidf("the plan is unchanged: nothing was sent (run it as it is with `hivecrew plan approve %s`)", shortID(id))
	}
	return e.printTaskState(c.TaskAction(e.ctx, id, wire.TaskAction{Action: wire.ActionEditPlan, PlanMarkdown: plan}))
}

// readPlan reads a new plan: from file ("-" is stdin), else from stdin
// when it is not a terminal, else from the editor (VISUAL, else EDITOR)
// on a copy of the current plan. A blank plan is an error: nothing is
// sent.
func readPlan(ctx context.Context, file string, stdin io.Reader, stdinTTY bool, visual, editor, current string) (string, error) {
	var (
		b    []byte
		err  error
		from string
	)
	switch {
	case file == "-" || (file == "" && !stdinTTY):
		from = "stdin"
		b, err = readCapped(stdin)
	case file != "":
		from = file
		var f *os.File
		if f, err = os.Open(file); err == nil {
			b, err = readCapped(f)
			f.Close()
		}
	default:
		from = "the editor"
		b, err = editPlan(ctx, or(visual, editor), current)
	}
	if err != nil {
		return "", fmt.Errorf("read the new plan from %s: %w", from, err)
	}
	plan := strings.TrimSpace(string(b))
	if plan == "" {
		return "", errdefs.Invalidf("the new plan from %s is empty: nothing was sent", from)
	}
	return plan, nil
}

func readCapped(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPlanBytes+1))
	if err == nil && len(b) > maxPlanBytes {
		err = errdefs.Invalidf("the plan is over %d bytes", maxPlanBytes)
	}
	return b, err
}

// editPlan opens the current plan in the user's editor (run by the shell,
// as git runs $EDITOR, so "code --wait" works) and returns what it saved.
func editPlan(ctx context.Context, editor, current string) ([]byte, error) {
	if strings.TrimSpace(editor) == "" {
		return nil, errdefs.Invalidf("$EDITOR is not set: give the plan with --file F or on stdin")
	}
	f, err := os.CreateTemp("", "hivecrew-plan-*.md")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(current + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "sh", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", editor, err)
	}
	f, err = os.Open(f.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f)
}

// stdinIsTerminal says whether stdin is a terminal.
func stdinIsTerminal() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// approveToolCall is what `approve` does, which is not approving a plan.
const approveToolCall = "approve a tool call of"

// planConflict is the error of an action a task's plan state does not
// allow, naming the commands that apply.
func planConflict(t wire.Task, what string) error {
	s := shortID(t.ID)
	switch {
	case t.Status == statusPlanReview && what == approveToolCall:
		return errdefs.Conflictf("task %s has no tool call waiting for approval; its plan waits for your review: approve it with `hivecrew plan approve %s` (see it with `hivecrew plan show %s`)", s, s, s)
	case t.Status == statusPlanReview:
		return errdefs.Conflictf("cannot %s task %s: its plan waits for your review: see it with `hivecrew plan show %s`, then run `hivecrew plan approve %s`, `hivecrew plan edit %s`, `hivecrew plan revise %s` or `hivecrew plan cancel %s`", what, s, s, s, s, s, s)
	case t.Status == statusPlanning:
		return errdefs.Conflictf("cannot %s task %s: the model is still writing its plan (`hivecrew plan show %s` shows it once written; `hivecrew plan cancel %s` cancels the task)", what, s, s, s)
	case t.Status == statusPlanFailed:
		reason := ""
		if t.ResultSummary != nil {
			reason = ": " + oneLine(*t.ResultSummary)
		}
		return errdefs.Conflictf("cannot %s task %s: its plan failed%s (`hivecrew rerun %s` tries again)", what, s, reason, s)
	}
	return errdefs.Conflictf("cannot %s task %s: it is %s, not waiting for plan review", what, s, t.Status)
}

// inPlanState rewrites a conflict of an action on a task that is planning
// or whose plan waits for review: the API names its own actions, the user
// needs the commands. Other errors pass unchanged.
func inPlanState(e *env, c *client.Client, id, what string, err error) error {
	if !errors.Is(err, errdefs.ErrConflict) {
		return err
	}
	t, gerr := c.Task(e.ctx, id)
	if gerr != nil || (t.Status != statusPlanReview && t.Status != statusPlanning) {
		return err
	}
	return planConflict(t, what)
}
