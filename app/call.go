package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// The shapes most commands share: parse, connect to the helper, call it,
// print the answer (as JSON with --json).

// connect parses args with fs, requiring n positional arguments, and
// connects to the helper (starting it when none answers).
func (e *env) connect(fs *flag.FlagSet, args []string, n int) (*client.Client, []string, error) {
	pos, err := e.parseN(fs, args, n)
	if err != nil {
		return nil, nil, err
	}
	c, err := e.client()
	if err != nil {
		return nil, nil, err
	}
	return c, pos, nil
}

// ask runs a command that asks the helper for something and prints it:
// connect with n positional arguments, call with them, then print the
// answer as JSON with --json, else with human.
func ask[T any](e *env, fs *flag.FlagSet, args []string, n int, call func(c *client.Client, pos []string) (T, error), human func(T) error) error {
	c, pos, err := e.connect(fs, args, n)
	if err != nil {
		return err
	}
	v, err := call(c, pos)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(v)
	}
	return human(v)
}

// act runs a command that has the helper do something to the one thing
// its argument names (do is a method such as (*client.Client).StopVM), then
// says done (a format for the argument).
func (e *env) act(args []string, do func(c *client.Client, ctx context.Context, arg string) error, done string) error {
	c, pos, err := e.connect(e.flags(), args, 1)
	if err != nil {
		return err
	}
	if err := do(c, e.ctx, pos[0]); err != nil {
		return err
	}
	e.out(done, pos[0])
	return nil
}

// printTable prints one row of cells per item under header, or the line
// none when there are no items.
func printTable[T any](e *env, items []T, none string, header []string, cells func(T) []string) error {
	if len(items) == 0 {
		e.out("%s", none)
		return nil
	}
	tw := table(e.stdout, header...)
	for _, it := range items {
		row(tw, cells(it)...)
	}
	return tw.Flush()
}

// nonNil is items, or an empty list for nil (JSON [] rather than null).
func nonNil[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}

// connectTask connects to the helper and resolves a task id or a unique
// prefix of one.
func (e *env) connectTask(arg string) (*client.Client, string, error) {
	c, err := e.client()
	if err != nil {
		return nil, "", err
	}
	id, err := e.taskID(c, arg)
	return c, id, err
}

// oneTask is the start of the commands that act on one task: it parses
// the flags with one positional ID, connects and resolves the id.
func (e *env) oneTask(args []string, fs *flag.FlagSet) (*client.Client, string, error) {
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return nil, "", err
	}
	return e.connectTask(pos[0])
}

// taskNow is oneTask that also gets the task as it is now.
func (e *env) taskNow(args []string, fs *flag.FlagSet) (*client.Client, wire.Task, error) {
	c, id, err := e.oneTask(args, fs)
	if err != nil {
		return nil, wire.Task{}, err
	}
	t, err := c.Task(e.ctx, id)
	return c, t, err
}

// taskAndText is the start of the commands that take a task id and a text
// (say, answer): it parses, requires both (else the usage error need),
// connects and resolves the id.
func (e *env) taskAndText(args []string, need string) (c *client.Client, id, text string, err error) {
	fs := e.flags()
	pos, err := e.parse(fs, args)
	if err != nil {
		return nil, "", "", err
	}
	if len(pos) < 2 {
		return nil, "", "", e.bad(fs, "%s", need)
	}
	c, id, err = e.connectTask(pos[0])
	return c, id, joinArgs(pos[1:]), err
}

// pending returns what the task id waits for (its question, its permission
// request), as get returns it, or a conflict naming what when there is none.
func pending[T any](e *env, id, what string, get func(ctx context.Context, id string) (*T, error)) (*T, error) {
	v, err := get(e.ctx, id)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errdefs.Conflictf("task %s has no pending %s", shortID(id), what)
	}
	return v, nil
}

// taskAction has the task args name (a command without flags of its own)
// take an action, and returns the task after it.
func (e *env) taskAction(args []string, action string) (wire.Task, error) {
	c, id, err := e.oneTask(args, e.flags())
	if err != nil {
		return wire.Task{}, err
	}
	return c.TaskAction(e.ctx, id, wire.TaskAction{Action: action})
}

// printTaskState prints a task's id and status after an action (the task
// with --json).
func (e *env) printTaskState(t wire.Task, err error) error {
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	e.out("%s  %s", t.ID, stateWords(t))
	return nil
}

// printNewTask prints the id of a task just created (the task with
// --json).
func (e *env) printNewTask(t wire.Task, err error) error {
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(t)
	}
	// The id alone on stdout (scripts take it from there); what to do
	// next on stderr.
	e.out("%s", t.ID)
	id := shortID(t.ID)
	fmt.Fprintf(e.stderr, "Task %s is %s. Follow it with `hivecrew logs -f %s`, or see it with `hivecrew show %s`.\n", id, statusWords(t.Status), id, id)
	return nil
}

// joinArgs is positional arguments taken as one text ("say ID Use the blue
// folder." as well as "say ID 'Use the blue folder.'").
func joinArgs(pos []string) string { return strings.TrimSpace(strings.Join(pos, " ")) }
