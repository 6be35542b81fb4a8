package main

import (
	"fmt"
	"os/exec"
	"runtime"
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
	cmd := exec.CommandContext(e.ctx, opener, l.URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s could not open the web UI (%w): %s; open it yourself with `hivecrew open --print`", opener, err, oneLine(string(out)))
	}
	e.out("Opened the web UI in your browser.")
	return nil
}
