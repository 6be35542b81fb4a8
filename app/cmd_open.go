package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
)

// cmdOpen: hivecrew open [--print] — the web UI, signed in by a one-time link.
func cmdOpen(e *env, args []string) error {
	fs := e.flags()
	printOnly := fs.Bool("print", false, "print the link instead of opening it")
	c, _, err := e.connect(fs, args, 0)
	if err != nil {
		return err
	}
	l, err := c.LoginLink(e.ctx)
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(l); err != nil {
			return err
		}
	} else if *printOnly {
		fmt.Fprintln(e.stdout, l.URL)
	}
	if *printOnly {
		return nil
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	// No browser (a server, a container): the link, and why, instead of
	// the opener's own complaints.
	if _, err := exec.LookPath(opener); err != nil {
		return e.noBrowser(l.URL, opener+" is not installed")
	}
	cmd := exec.CommandContext(e.ctx, opener, l.URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		why := "no browser was found"
		if msg := oneLine(string(out)); msg != "" && !strings.Contains(msg, "no method available") && !strings.Contains(msg, "not found") {
			why = opener + " failed: " + clip(msg, 120)
		}
		return e.noBrowser(l.URL, why)
	}
	e.out("Opened the web UI in your browser.")
	return nil
}

// noBrowser prints the sign-in link for the user to open, and exits 1.
func (e *env) noBrowser(url, why string) error {
	fmt.Fprintf(e.stderr, "hivecrew: could not open a browser (%s). Open this one-time sign-in link in one (it works once, for a few minutes):\n", why)
	fmt.Fprintln(e.stdout, url)
	return exitCode(1)
}
