package main

import (
	"fmt"

	"github.com/hivecrew/hivecrew/core/version"
)

// cmdVersion: hivecrew version
func cmdVersion(e *env, args []string) error {
	if _, err := e.parseN(e.flags(), args, 0); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]string{"version": version.Version})
	}
	fmt.Fprintln(e.stdout, "hivecrew", version.Version)
	return nil
}
