package template

import "testing"

// TestAgentOutdated: a guest agent older than the helper is outdated, by
// semantic version where both are versions, by any difference otherwise.
func TestAgentOutdated(t *testing.T) {
	for _, c := range []struct {
		guest, host string
		want        bool
	}{
		{"v1.2.0", "v1.3.0", true},
		{"v1.3.0", "v1.3.0", false},
		{"v1.4.0", "v1.3.0", false},
		{"1.2.9", "v1.10.0", true},
		{"v1.3.0-2-gabcdef", "v1.3.0", false},
		{"v1.3.0", "v1.3.0-2-gabcdef", true},
		{"v1.3.0-2-gaaaaaa", "v1.3.0-5-gbbbbbb", true},
		{"v1.3.0-5-gaaaaaa", "v1.3.0-5-gbbbbbb", true},
		{"v1.3.0-5-gaaaaaa-dirty", "v1.3.0-5-gaaaaaa", false},
		{"v1.3.0-dirty", "v1.3.0", false},
		{"v1.3.0-rc.1", "v1.3.0", true},
		{"dev", "v1.3.0", true},
		{"abc123", "def456", true},
		{"", "v1.3.0", false},
		{"v1.3.0", "", false},
		{"dev", "dev", false},
	} {
		if got := AgentOutdated(c.guest, c.host); got != c.want {
			t.Errorf("AgentOutdated(%q, %q) = %v, want %v", c.guest, c.host, got, c.want)
		}
	}
}
