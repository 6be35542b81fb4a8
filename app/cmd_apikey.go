package main

import (
	"fmt"
	"os"
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdAPIKey: hivecrew apikey create|ls|revoke
func cmdAPIKey(e *env, args []string) error {
	return runTable(e, "apikey", []command{
		{"create", "[--name N]", "create an API key and print it (shown once)", apikeyCreate},
		{"ls", "", "list API keys (never the keys themselves)", apikeyLs},
		{"revoke", "ID|PREFIX", "revoke an API key", apikeyRevoke},
	}, args)
}

func apikeyCreate(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "`NAME` saying what the key is for (default \"cli on <host>\")")
	if _, err := e.parseN(fs, args, 0); err != nil {
		return err
	}
	if *name == "" {
		host, _ := os.Hostname()
		*name = "cli on " + or(host, "this machine")
	}
	c, err := e.client()
	if err != nil {
		return err
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
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	keys, err := c.APIKeys(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		if keys == nil {
			keys = []wire.APIKey{}
		}
		return e.printJSON(wire.APIKeyList{Keys: keys})
	}
	if len(keys) == 0 {
		e.out("No API keys yet: create one with `hivecrew apikey create --name NAME`.")
		return nil
	}
	now := time.Now()
	tw := table(e.stdout, "ID", "NAME", "PREFIX", "CREATED", "LAST USED", "REVOKED")
	for _, k := range keys {
		last, revoked := "never", "-"
		if k.LastUsedAt != nil {
			last = ago(*k.LastUsedAt, now)
		}
		if k.RevokedAt != nil {
			revoked = ago(*k.RevokedAt, now)
		}
		row(tw, k.ID, k.Name, k.Prefix, ago(k.CreatedAt, now), last, revoked)
	}
	return tw.Flush()
}

func apikeyRevoke(e *env, args []string) error {
	pos, err := e.parseN(e.flags(), args, 1)
	if err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	if err := c.RevokeAPIKey(e.ctx, pos[0]); err != nil {
		return err
	}
	e.out("Revoked API key %s.", pos[0])
	return nil
}
