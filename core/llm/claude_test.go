package llm

import (
	"slices"
	"testing"
)

// TestClaudeMarks: the breakpoint before the oldest image goes on the
// turn right before it (the assistant's call whose result shows it), or
// on the user turn before that when the call's turn ends in a block that
// takes none (thinking); the last user turn is left out when nothing of
// it is read again.
func TestClaudeMarks(t *testing.T) {
	roles := []Role{RoleUser, RoleAssistant, RoleUser, RoleAssistant, RoleUser, RoleAssistant, RoleUser}
	all := func(int) bool { return true }
	for _, c := range []struct {
		name     string
		dropNext bool
		markable func(int) bool
		want     []int
	}{
		{"call before the image", false, all, []int{3, 4, 6}},
		{"thinking before the image", false, func(i int) bool { return i != 3 }, []int{2, 4, 6}},
		{"images dropped next", true, all, []int{3, 4}},
	} {
		got := claudeMarks(roles, 4, c.dropNext, c.markable)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: marks %v, want %v", c.name, got, c.want)
		}
	}
	if got := claudeMarks(roles[:3], -1, false, all); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("no image: marks %v, want the last two user turns", got)
	}
}
