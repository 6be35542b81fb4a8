package main

import (
	"context"
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
		{"on", "NAME|ID", "send a webhook its events again", webhooksSwitch(true)},
		{"off", "NAME|ID", "stop sending a webhook anything (it is kept)", webhooksSwitch(false)},
		{"rm", "NAME|ID", "remove a webhook and its secret", remover((*client.Client).RemoveWebhook, "Removed webhook %s.")},
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
	return send(e, func(c *client.Client) (wire.Webhook, error) {
		return c.AddWebhook(e.ctx, in)
	}, func(w wire.Webhook) {
		e.out("Added webhook %s; try it with: hivecrew webhooks test %s", w.Name, w.Name)
	})
}

func webhooksLs(e *env, args []string) error {
	return listing[wire.WebhookList, wire.Webhook]{
		get: func(c *client.Client, ctx context.Context) (wire.WebhookList, error) {
			ws, err := c.Webhooks(ctx)
			return wire.WebhookList{Webhooks: nonNil(ws)}, err
		},
		items:  func(l wire.WebhookList) []wire.Webhook { return l.Webhooks },
		none:   "No webhooks yet: hivecrew webhooks add --name NAME --url URL",
		header: []string{"NAME", "ON", "FORMAT", "EVENTS", "SECRET", "URL"},
		cells: func(w wire.Webhook) []string {
			return []string{w.Name, onOff(w.Enabled), w.Format, or(strings.Join(w.Events, ","), "all"), yesNo(w.HasSecret), w.URL}
		},
	}.run(e, args)
}

// webhooksTest fails (after printing the answer) when the test did not
// reach the receiver or it refused.
func webhooksTest(e *env, args []string) error {
	return probe(e, args, (*client.Client).TestWebhook, func(name string, r wire.WebhookTest) {
		if r.OK {
			e.out("%s works: it answered %d.", name, r.Status)
		}
	}, func(name string, r wire.WebhookTest) error { return doesNotWork(name, r.OK, r.Error) })
}

// webhooksSwitch is webhooks on (on) or off.
func webhooksSwitch(on bool) func(e *env, args []string) error {
	return switcher((*client.Client).SetWebhookEnabled, func(e *env, w wire.Webhook, on bool) {
		if on {
			e.out("Webhook %s is on: it is sent its events.", w.Name)
		} else {
			e.out("Webhook %s is off: it is sent nothing until it is turned on.", w.Name)
		}
	})(on)
}
