package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdCredentials: hivecrew credentials add|ls|rm — logins the agent types
// without seeing them (use_credential).
func cmdCredentials(e *env, args []string) error {
	return runTable(e, "credentials", []command{
		{"add", "--name N [--username U] --password -|P [--totp-seed -|S] [--app APP]...", "store a login the agent may type", credentialsAdd},
		{"ls", "", "list the stored credentials (never their secrets)", credentialsLs},
		{"rm", "NAME|ID", "remove a credential and its secrets", credentialsRm},
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
	for _, v := range []*string{&in.Password, &in.TOTPSeed} {
		if *v == "-" {
			line, err := bufio.NewReader(e.stdin()).ReadString('\n')
			if err != nil && err != io.EOF {
				return fmt.Errorf("read from stdin: %w", err)
			}
			*v = strings.TrimRight(line, "\r\n")
		}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	cr, err := c.AddCredential(e.ctx, in)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(cr)
	}
	e.out("Stored credential %s (the agent asks you before it types it, once a task).", cr.Name)
	return nil
}

func credentialsLs(e *env, args []string) error {
	c, _, err := e.connect(e.flags(), args, 0)
	if err != nil {
		return err
	}
	cs, err := c.Credentials(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(wire.CredentialList{Credentials: cs})
	}
	if len(cs) == 0 {
		e.out("No credentials yet: hivecrew credentials add --name NAME --username U --password -")
		return nil
	}
	// The application limit is a convenience (the VM reports what is in
	// front), and its column says so.
	tw := table(e.stdout, "NAME", "USERNAME", "PASSWORD", "TOTP", "IN FRONT (CONVENIENCE)")
	for _, cr := range cs {
		row(tw, cr.Name, or(cr.Username, "-"), yesNo(cr.HasPassword), yesNo(cr.HasTOTP), or(strings.Join(cr.AllowedApps, ", "), "any application"))
	}
	return tw.Flush()
}

func credentialsRm(e *env, args []string) error {
	return e.act(args, (*client.Client).RemoveCredential, "Removed credential %s.")
}

func yesNo(b bool) string {
	if b {
		return "stored"
	}
	return "-"
}
