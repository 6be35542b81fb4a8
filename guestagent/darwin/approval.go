package darwin

import (
	"fmt"
	"strings"
	"time"
)

// macOS 15 asks again, about once a month, whether an app may keep
// recording the screen, with an alert over everything on the screen; in a
// VM clone the alert would sit over the guest's screen in front of the
// agent's model. replayd keeps each app's last approval in the
// ScreenCaptureApprovals defaults of the user; the template kit
// (install-agent.sh) records the agent's approval far in the future, and
// health_check reports an approval that is missing or due soon.
const (
	// ApprovalsDomain is the defaults domain of the approvals, under $HOME.
	ApprovalsDomain = "Library/Group Containers/group.com.apple.replayd/ScreenCaptureApprovals"
	// AgentPath is the guest agent in a template (the approval's key).
	AgentPath = "/usr/local/bin/hivecrew-guestagent"
	// approvalMargin: an approval due within this is reported.
	approvalMargin = 35 * 24 * time.Hour
)

// ApprovalProblem reads the output of `defaults read <ApprovalsDomain>
// <AgentPath>` (readErr: it failed, the key is missing) on macOS major
// version major, at now, and says what is wrong, or "".
func ApprovalProblem(major int, out string, readErr error, now time.Time) string {
	if major < 15 {
		return ""
	}
	const fix = `run install-agent.sh again in the template (it records the approval)`
	if readErr != nil {
		return "the Screen Recording approval of the guest agent is not recorded: macOS 15 will show its monthly Screen Recording alert over the screen; " + fix
	}
	at, err := time.Parse("2006-01-02 15:04:05 -0700", strings.TrimSpace(out))
	if err != nil {
		return fmt.Sprintf("the Screen Recording approval of the guest agent is unreadable (%q): macOS 15 may show its monthly alert over the screen; %s", strings.TrimSpace(out), fix)
	}
	if at.Before(now.Add(approvalMargin)) {
		return fmt.Sprintf("the Screen Recording approval of the guest agent is due %s: macOS 15 will show its alert over the screen then; %s", at.UTC().Format("2006-01-02"), fix)
	}
	return ""
}

// macOSMajor is the major version in "macOS 15.1" (the driver's
// osVersion) or "15.1"; 0 when there is none.
func macOSMajor(v string) int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "macOS ")
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' || n > 1000 {
			break
		}
		n = n*10 + int(r-'0')
	}
	if n > 1000 {
		return 0
	}
	return n
}
