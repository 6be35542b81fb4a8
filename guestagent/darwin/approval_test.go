package darwin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApprovalProblem answers issue 16.8 (macOS 15's monthly Screen
// Recording re-approval alert appears over the guest's screen in clones):
// health_check says so when the template did not record the agent's
// approval, or recorded one that is due, and says nothing for the
// far-future approval install-agent.sh writes, nor before macOS 15.
func TestApprovalProblem(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		major   int
		out     string
		err     error
		problem string
	}{
		{15, "3024-01-01 00:00:00 +0000\n", nil, ""},
		{26, "3024-01-01 00:00:00 +0000", nil, ""},
		{15, "2026-12-01 10:40:36 +0000", nil, "due 2026-12-01"},
		{15, "2026-10-01 10:40:36 +0000", nil, "due 2026-10-01"},
		{15, "", errors.New("The domain/default pair does not exist"), "not recorded"},
		{15, "{\n}", nil, "unreadable"},
		{14, "", errors.New("missing"), ""},
	} {
		got := ApprovalProblem(c.major, c.out, c.err, now)
		if (c.problem == "") != (got == "") || !strings.Contains(got, c.problem) {
			t.Errorf("macOS %d, %q, %v: %q, want %q", c.major, c.out, c.err, got, c.problem)
		}
	}
	// The template kit records exactly what health_check reads.
	script, err := os.ReadFile(filepath.Join("..", "..", "templates", "macos-15-base", "install-agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	want := `defaults write "$HOME/` + ApprovalsDomain + `" "$dest" -date "3024-01-01 00:00:00 +0000"`
	if !strings.Contains(string(script), want) || !strings.Contains(string(script), "dest="+AgentPath) {
		t.Errorf("install-agent.sh does not record the approval as health_check reads it; want %s", want)
	}
	if got := ApprovalProblem(15, "3024-01-01 00:00:00 +0000", nil, now); got != "" {
		t.Errorf("the kit's own approval is reported: %s", got)
	}
}

func TestMacOSMajor(t *testing.T) {
	for in, want := range map[string]int{"macOS 15.1": 15, "macOS 26.0.1": 26, "14.7": 14, "macOS": 0, "": 0, "macOS 99999999": 0} {
		if got := macOSMajor(in); got != want {
			t.Errorf("macOSMajor(%q) = %d, want %d", in, got, want)
		}
	}
}
