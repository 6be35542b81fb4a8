package main

import (
	"fmt"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdWebhooks: hivecrew webhooks add|ls|test|on|off|rm — addresses told when a
// task ends, asks a question or a permission, or has changes to review.
func cmdWebhooks(e *env, args []string) error {
	return runTable(e, "webhooks", []command{
		{"add", "--name N --url URL [--format json|slack|discord] [--event E]... [--secret S|-] [--off]", "add a webhook", webhooksAdd},
		{"ls", "", "list the webhooks (addresses without their path, never their secrets)", webhooksLs},
		{"test", "NAME|ID", "send a webhook a test notice and show the answer", webhooksTest},
		{"on", "NAME|ID", "send a webhook its events again", func(e *env, args []string) error { return webhooksSwitch(e, args, true) }},
		{"off", "NAME|ID", "stop sending a webhook anything (it is kept)", func(e *env, args []string) error { return webhooksSwitch(e, args, false) }},
		{"rm", "NAME|ID", "remove a webhook and its secret", webhooksRm},
	}, args)
}

func webhooksAdd(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "the webhook's `NAME` (required)")
	url := fs.String("url", "", "the http(s) `URL` to POST to (required)")
	format := fs.String("format", "json", "the body's shape: json, slack or discord (`F`)")
	var events listFlag
	fs.Var(&events, "event", "send only `EVENT`: task.ended, task.question, task.permission or task.review (repeatable; default all)")
	secret := fs.String("secret", "", "sign each body with `SECRET` (X-Hivecrew-Signature; \"-\" reads it from stdin; kept as a secret)")
	off := fs.Bool("off", false, "add it turned off")
	if _, err := e.parse(fs, args); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" || *url == "" {
		return e.bad(fs, "webhooks add needs --name and --url")
	}
	in := wire.WebhookInput{Name: *name, URL: *url, Format: *format, Events: events, Secret: *secret}
	if *off {
		in.Enabled = new(bool)
	}
	if in.Secret == "-" {
		v, err := (&lazyLine{r: e.stdin()}).read("the secret")
		if err != nil {
			return err
		}
		in.Secret = v
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	w, err := c.AddWebhook(e.ctx, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(w)
	}
	e.out("Added webhook %s; try it with: hivecrew webhooks test %s", w.Name, w.Name)
	return nil
}

func webhooksLs(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (wire.WebhookList, error) {
		ws, err := c.Webhooks(e.ctx)
		return wire.WebhookList{Webhooks: nonNil(ws)}, err
	}, func(l wire.WebhookList) error {
		return printTable(e, l.Webhooks, "No webhooks yet: hivecrew webhooks add --name NAME --url URL",
			[]string{"NAME", "ON", "FORMAT", "EVENTS", "SECRET", "URL"}, func(w wire.Webhook) []string {
				return []string{w.Name, onOff(w.Enabled), w.Format, or(strings.Join(w.Events, ","), "all"), yesNo(w.HasSecret), w.URL}
			})
	})
}

// webhooksTest fails (after printing the answer) when the test did not
// reach the receiver or it refused.
func webhooksTest(e *env, args []string) error {
	var name string
	var got wire.WebhookTest
	err := ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.WebhookTest, error) {
		name = pos[0]
		r, err := c.TestWebhook(e.ctx, name)
		got = r
		return r, err
	}, func(r wire.WebhookTest) error {
		if r.OK {
			e.out("%s works: it answered %d.", name, r.Status)
		}
		return nil
	})
	if err == nil && !got.OK {
		return fmt.Errorf("%s does not work: %s", name, got.Error)
	}
	return err
}

func webhooksSwitch(e *env, args []string, on bool) error {
	return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.Webhook, error) {
		return c.SetWebhookEnabled(e.ctx, pos[0], on)
	}, func(w wire.Webhook) error {
		if on {
			e.out("Webhook %s is on: it is sent its events.", w.Name)
		} else {
			e.out("Webhook %s is off: it is sent nothing until it is turned on.", w.Name)
		}
		return nil
	})
}

func webhooksRm(e *env, args []string) error {
	return e.act(args, (*client.Client).RemoveWebhook, "Removed webhook %s.")
}
