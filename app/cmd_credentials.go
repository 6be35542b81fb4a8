package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdCredentials: hivecrew credentials add|edit|import|ls|rm — logins the agent types
// without seeing them (use_credential).
func cmdCredentials(e *env, args []string) error {
	return runTable(e, "credentials", []command{
		{"add", "--name N [--username U] --password -|P [--totp-seed -|S] [--app APP]...", "store a login the agent may type", credentialsAdd},
		{"edit", "NAME|ID [--name N] [--username U] [--password -|P] [--totp-seed -|S] [--no-password] [--no-totp] [--app APP]... [--any-app]", "change a credential (what is not given stays)", credentialsEdit},
		{"import", "FILE|-", "store every login of a browser's password export (CSV: Chrome, Firefox, Safari), all or none", credentialsImport},
		{"ls", "", "list the stored credentials (never their secrets)", credentialsLs},
		{"rm", "NAME|ID", "remove a credential and its secrets", remover((*client.Client).RemoveCredential, "Removed credential %s.")},
	}, args)
}

func credentialsAdd(e *env, args []string) error {
	fs := e.flags()
	name := fs.String("name", "", "the `NAME` the agent uses it by (required)")
	username := fs.String("username", "", "the `USERNAME` (not secret)")
	password := fs.String("password", "", "the password (\"-\" reads it from stdin; `P` on the command line ends up in your shell history)")
	seed := fs.String("totp-seed", "", "the base32 TOTP `SEED` of an authenticator (\"-\" reads it from stdin)")
	var apps listFlag
	fs.Var(&apps, "app", "only type it while `APP` is in front, as the VM reports it (repeatable): a convenience against typing it into the wrong window, not a safety control")
	if _, err := e.parseN(fs, args, 0); err != nil {
		return err
	}
	if strings.TrimSpace(*name) == "" {
		return e.bad(fs, "credentials add needs --name")
	}
	if *password == "-" && *seed == "-" {
		return e.bad(fs, "read the password or the TOTP seed from stdin, not both")
	}
	in := wire.CredentialInput{Name: *name, Username: *username, Password: *password, TOTPSeed: *seed, AllowedApps: apps}
	if err := fromStdin(e, &in.Password, &in.TOTPSeed); err != nil {
		return err
	}
	return send(e, func(c *client.Client) (wire.Credential, error) {
		return c.AddCredential(e.ctx, in)
	}, func(cr wire.Credential) {
		e.out("Stored credential %s (the agent asks you before it types it, once a task).", cr.Name)
	})
}

func credentialsLs(e *env, args []string) error {
	return listing[wire.CredentialList, wire.Credential]{
		get: func(c *client.Client, ctx context.Context) (wire.CredentialList, error) {
			cs, err := c.Credentials(ctx)
			return wire.CredentialList{Credentials: cs}, err
		},
		items: func(l wire.CredentialList) []wire.Credential { return l.Credentials },
		none:  "No credentials yet: hivecrew credentials add --name NAME --username U --password -",
		// The application limit is a convenience (the VM reports what is
		// in front), and its column says so.
		header: []string{"NAME", "USERNAME", "PASSWORD", "TOTP", "IN FRONT (CONVENIENCE)"},
		cells: func(cr wire.Credential) []string {
			return []string{cr.Name, or(cr.Username, "-"), yesNo(cr.HasPassword), yesNo(cr.HasTOTP), or(strings.Join(cr.AllowedApps, ", "), "any application")}
		},
	}.run(e, args)
}

func yesNo(b bool) string {
	if b {
		return "stored"
	}
	return "-"
}

// fromStdin replaces a value "-" by a line of stdin (at most one is).
func fromStdin(e *env, values ...*string) error {
	for _, v := range values {
		if v != nil && *v == "-" {
			line, err := bufio.NewReader(e.stdin()).ReadString('\n')
			if err != nil && err != io.EOF {
				return fmt.Errorf("read from stdin: %w", err)
			}
			*v = strings.TrimRight(line, "\r\n")
		}
	}
	return nil
}

func credentialsEdit(e *env, args []string) error {
	fs := e.flags()
	var p wire.CredentialPatch
	given := map[string]*string{}
	for _, f := range []struct{ name, usage string }{
		{"name", "rename it to `NAME`"},
		{"username", "the `USERNAME`"},
		{"password", "a new password (\"-\" reads it from stdin; `P` on the command line ends up in your shell history)"},
		{"totp-seed", "a new base32 TOTP `SEED` (\"-\" reads it from stdin)"},
	} {
		given[f.name] = fs.String(f.name, "", f.usage)
	}
	noPassword := fs.Bool("no-password", false, "remove the password (the TOTP seed stays)")
	noTOTP := fs.Bool("no-totp", false, "remove the TOTP seed")
	var apps listFlag
	fs.Var(&apps, "app", "only type it while `APP` is in front (repeatable; replaces the list)")
	anyApp := fs.Bool("any-app", false, "type it whatever is in front")
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !slices.ContainsFunc([]string{"name", "username", "password", "totp-seed", "no-password", "no-totp", "app", "any-app"}, func(f string) bool { return set[f] }) {
		return e.bad(fs, "credentials edit: say what to change")
	}
	if *given["password"] == "-" && *given["totp-seed"] == "-" {
		return e.bad(fs, "read the password or the TOTP seed from stdin, not both")
	}
	for flagName, dst := range map[string]**string{"name": &p.Name, "username": &p.Username, "password": &p.Password, "totp-seed": &p.TOTPSeed} {
		if set[flagName] {
			*dst = given[flagName]
		}
	}
	if *noPassword {
		p.Password = new(string)
	}
	if *noTOTP {
		p.TOTPSeed = new(string)
	}
	if len(apps) > 0 || *anyApp {
		list := []string(apps)
		p.AllowedApps = &list
	}
	if err := fromStdin(e, p.Password, p.TOTPSeed); err != nil {
		return err
	}
	return ask(e, fs, nil, 0, func(c *client.Client, _ []string) (wire.Credential, error) {
		return c.EditCredential(e.ctx, pos[0], p)
	}, func(cr wire.Credential) error {
		e.out("Changed credential %s.", cr.Name)
		return nil
	})
}

func credentialsImport(e *env, args []string) error {
	fs := e.flags()
	pos, err := e.parseN(fs, args, 1)
	if err != nil {
		return err
	}
	in := e.stdin()
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("credentials import: %w", err)
		}
		defer f.Close()
		in = f
	}
	return ask(e, fs, nil, 0, func(c *client.Client, _ []string) ([]wire.Credential, error) {
		return c.ImportCredentials(e.ctx, in)
	}, func(cs []wire.Credential) error {
		e.out("Imported %d credential(s); the agent asks you before it types each, once a task:", len(cs))
		for _, cr := range cs {
			e.out("  %s  %s", cr.Name, or(cr.Username, "-"))
		}
		e.out("Delete the export file now: it holds your passwords in plain text.")
		return nil
	})
}
