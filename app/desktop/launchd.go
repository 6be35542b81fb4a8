package desktop

import (
	"fmt"
	"strings"
	"time"
)

// HelperServiceArgs is the helper LaunchAgent's ProgramArguments: serve,
// with the guest agent named explicitly when the app found one (the
// helper also finds it by itself in Hivecrew.app's Resources, but an
// explicit path leaves no doubt which binary templates get).
func HelperServiceArgs(helper, guestAgent string) []string {
	args := []string{helper, "serve"}
	if guestAgent != "" {
		args = append(args, "--guest-agent", guestAgent)
	}
	return args
}

// launchctlRunner runs launchctl with args and returns its combined
// output; an exit status other than 0 is an error.
type launchctlRunner func(args ...string) ([]byte, error)

// launchdBusy reports launchctl errors that mean "launchd has not finished
// removing the previous job yet": bootstrap fails with 5 (Input/output
// error) or 37 (Operation already in progress) while a bootout is still
// under way.
func launchdBusy(out []byte) bool {
	s := string(out)
	return strings.Contains(s, "5: Input/output error") || strings.Contains(s, "37: Operation already in progress")
}

// replaceLaunchAgent replaces the job label in domain (gui/<uid>) with the
// agent at plist. `launchctl bootout` returns before launchd has let the
// old job go, and a bootstrap in that window fails; so it waits until
// `launchctl print` no longer finds the job, then bootstraps, retrying
// while launchd says it is busy, all within wait.
func replaceLaunchAgent(run launchctlRunner, domain, label, plist string, wait time.Duration, sleep func(time.Duration)) error {
	target := domain + "/" + label
	deadline := time.Duration(0)
	const step = 100 * time.Millisecond
	if _, err := run("print", target); err == nil {
		// Not found is fine: the job may have ended meanwhile.
		run("bootout", target)
		for {
			if _, err := run("print", target); err != nil {
				break
			}
			if deadline >= wait {
				return fmt.Errorf("launchctl: %s is still loaded %s after bootout", target, wait)
			}
			sleep(step)
			deadline += step
		}
	}
	for {
		out, err := run("bootstrap", domain, plist)
		if err == nil {
			return nil
		}
		if !launchdBusy(out) || deadline >= wait {
			return fmt.Errorf("launchctl bootstrap %s %s: %v: %s", domain, plist, err, strings.TrimSpace(string(out)))
		}
		sleep(step)
		deadline += step
	}
}
