package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdAPIKey: hivecrew apikey create|ls|revoke
func cmdAPIKey(e *env, args []string) error {
	return runTable(e, "apikey", []command{
		{"create", "[--name N]", "create an API key and print it (shown once)", apikeyCreate},
		{"ls", "", "list API keys (never the keys themselves)", apikeyLs},
		{"revoke", "ID|PREFIX", "revoke an API key", remover((*client.Client).RevokeAPIKey, "Revoked API key %s.")},
	}, args)
}

func apikeyCreate(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "`NAME` saying what the key is for (default \"cli on <host>\")")
	c, _, err := e.connect(fs, args, 0)
	if err != nil {
		return err
	}
	if *name == "" {
		host, _ := os.Hostname()
		*name = "cli on " + or(host, "this machine")
	}
	k, err := c.CreateAPIKey(e.ctx, *name)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(k)
	}
	fmt.Fprintln(e.stdout, k.Key)
	fmt.Fprintf(e.stderr, "API key %q created (%s). Save it now: it is not shown again.\n", k.Name, k.Prefix)
	return nil
}

func apikeyLs(e *env, args []string) error {
	return listing[wire.APIKeyList, wire.APIKey]{
		get: func(c *client.Client, ctx context.Context) (wire.APIKeyList, error) {
			keys, err := c.APIKeys(ctx)
			return wire.APIKeyList{Keys: nonNil(keys)}, err
		},
		items:  func(l wire.APIKeyList) []wire.APIKey { return l.Keys },
		none:   "No API keys yet: create one with `hivecrew apikey create --name NAME`.",
		header: []string{"ID", "NAME", "PREFIX", "CREATED", "LAST USED", "REVOKED"},
		cells: func(k wire.APIKey) []string {
			now := time.Now()
			last, revoked := "never", "-"
			if k.LastUsedAt != nil {
				last = ago(*k.LastUsedAt, now)
			}
			if k.RevokedAt != nil {
				revoked = ago(*k.RevokedAt, now)
			}
			return []string{k.ID, k.Name, k.Prefix, ago(k.CreatedAt, now), last, revoked}
		},
	}.run(e, args)
}
