package main

import (
	"context"
	"fmt"

	"github.com/hivecrew/hivecrew/core/client"
)

// The one shape of the groups that manage a kind of thing (providers, MCP
// servers, webhooks, skills, credentials, devices, API keys, VMs, presets,
// schedules, templates): their rows of runTable's dispatch table are made
// here, so that every group's ls lists, rm removes, on and off switch, and
// test or check tries a thing alike.

// listing is a group's ls: get asks the helper for the list (the wire's
// list object, printed as it is with --json), items are its rows, each
// printed as cells under header; none is the line said for no rows.
type listing[L, T any] struct {
	get    func(c *client.Client, ctx context.Context) (L, error)
	items  func(L) []T
	none   string
	header []string
	cells  func(T) []string
	// after, when set, prints what follows the table (to stderr).
	after func(e *env, l L)
}

// run lists; the command takes no argument.
func (l listing[L, T]) run(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (L, error) {
		return l.get(c, e.ctx)
	}, func(v L) error {
		err := printTable(e, l.items(v), l.none, l.header, l.cells)
		if l.after != nil {
			l.after(e, v)
		}
		return err
	})
}

// remover is a group's rm (or revoke): do has the helper remove the thing
// the one argument names; then done, a format for the argument, is said.
func remover(do func(c *client.Client, ctx context.Context, arg string) error, done string) func(e *env, args []string) error {
	return func(e *env, args []string) error { return e.act(args, do, done) }
}

// switcher makes a group's on and off: set has the helper turn the thing
// the one argument names on or off and returns it (printed as it is with
// --json), else said says what became of it.
func switcher[T any](set func(c *client.Client, ctx context.Context, arg string, on bool) (T, error), said func(e *env, v T, on bool)) func(on bool) func(e *env, args []string) error {
	return func(on bool) func(e *env, args []string) error {
		return func(e *env, args []string) error {
			return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (T, error) {
				return set(c, e.ctx, pos[0], on)
			}, func(v T) error {
				said(e, v, on)
				return nil
			})
		}
	}
}

// probe is a group's test or check: try has the helper try the thing the
// one argument names (a provider's endpoint, an MCP server, a webhook);
// the answer is printed as it is with --json, else by human; then failed
// is the command's error when it did not work (nil when it did).
func probe[T any](e *env, args []string, try func(c *client.Client, ctx context.Context, arg string) (T, error), human func(arg string, v T), failed func(arg string, v T) error) error {
	c, pos, err := e.connect(e.flags(), args, 1)
	if err != nil {
		return err
	}
	v, err := try(c, e.ctx, pos[0])
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(v); err != nil {
			return err
		}
	} else {
		human(pos[0], v)
	}
	return failed(pos[0], v)
}

// doesNotWork is a probe's failure: the thing named did not work, for why
// (nil when ok).
func doesNotWork(name string, ok bool, why string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("%s does not work: %s", name, why)
}

// send is the end of an add or edit command: call has the helper store
// what the command built; the answer is printed as it is with --json,
// else said says what became of it.
func send[T any](e *env, call func(c *client.Client) (T, error), said func(T)) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	v, err := call(c)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(v)
	}
	said(v)
	return nil
}
