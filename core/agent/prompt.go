package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hivecrew/hivecrew/core/config"
)

// promptInfo is what the system prompt tells the model.
type promptInfo struct {
	GuestOS     string
	OSVersion   string
	SharedPath  string
	Network     string
	Policy      config.ToolPolicy
	Date        time.Time
	ScreenW     int
	ScreenH     int
	MaxSteps    int
	TimeoutMins int
	TextOnly    bool
	// Native: the model acts through its provider's computer tool.
	Native bool
	// Credentials names the stored credentials ("" for none).
	Credentials string
	// Extra are lines of the host's (the skills on offer, say).
	Extra []string
}

func systemPrompt(p promptInfo) string {
	var b strings.Builder
	osName := map[string]string{"macos": "macOS", "linux": "Linux"}[p.GuestOS]
	if osName == "" {
		osName = p.GuestOS
	}
	fmt.Fprintf(&b, "You are Hivecrew's computer-use agent. You operate a %s computer (%s) through tools, one isolated virtual machine for this task.\n", osName, p.OSVersion)
	fmt.Fprintf(&b, "Today is %s.\n\n", p.Date.Format("Monday, 2 January 2006"))
	fmt.Fprintf(&b, "Files: the shared folder is %s. Input files are in %s/inbox. Save every result the user should get in %s/outbox. Use %s/workspace for scratch work.\n",
		p.SharedPath, p.SharedPath, p.SharedPath, p.SharedPath)
	if p.Network == "offline" {
		b.WriteString("Network: this machine is offline; do not try to use the internet.\n")
	} else {
		b.WriteString("Network: this machine can reach the internet.\n")
	}
	if p.Native {
		b.WriteString("Screen: you see the screen and act on it with the computer tool: the result of your last computer action in a turn shows the screen after the turn. Other tools open apps, files and URLs, run commands, read and write files, and ask the user. traverse_accessibility_tree numbers the elements it shows (e1, e2, …): click_element and set_element_value act on one by id.\n")
	} else if p.TextOnly {
		b.WriteString("Screen: you get no screenshots. Each turn you get the application in front and the accessibility tree of the screen, its elements numbered e1, e2, …; act on them by id with click_element and set_element_value, and with the keyboard. The ids change with each tree.\n")
	} else {
		b.WriteString("Screen: each turn you get a screenshot; give coordinates in the pixels of the latest screenshot. traverse_accessibility_tree numbers the elements it shows (e1, e2, …): click_element and set_element_value act on one by id, which is often more precise than a point.\n")
	}
	fmt.Fprintf(&b, "Limits: at most %d steps and %d minutes.\n", p.MaxSteps, p.TimeoutMins)
	if p.Credentials != "" {
		fmt.Fprintf(&b, "Stored credentials (focus the field, then use_credential types it; you never see the secret): %s.\n", p.Credentials)
	}
	for _, line := range p.Extra {
		b.WriteString(line + "\n")
	}
	var ask, deny []string
	for _, tool := range slices.Sorted(maps.Keys(p.Policy)) {
		switch p.Policy[tool] {
		case config.Ask:
			ask = append(ask, tool)
		case config.Deny:
			deny = append(deny, tool)
		}
	}
	if len(ask) > 0 {
		fmt.Fprintf(&b, "The user approves each use of: %s (the call waits for the approval).\n", strings.Join(ask, ", "))
	}
	if len(deny) > 0 {
		fmt.Fprintf(&b, "Not allowed: %s.\n", strings.Join(deny, ", "))
	}
	b.WriteString("\nWork step by step: look at the screen, act, check the result. If you need information only the user has, ask with ask_text_question or ask_multiple_choice. When the task is done, or cannot be done, answer without a tool call and say what you did.\n")
	return b.String()
}
