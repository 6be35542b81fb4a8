package sandbox

import (
	"strings"
	"testing"
)

// TestHostRootIsAnAllowlist: on this host (which has /work, /srv, /opt,
// /var and /boot) the host template binds only /usr and its links, and
// /etc only entry by entry, never the secrets.
func TestHostRootIsAnAllowlist(t *testing.T) {
	root, err := hostRoot()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range root {
		seen[e.Name] = true
		top, _, _ := strings.Cut(e.Name, "/")
		if top != "etc" && !boundRoot[top] {
			t.Errorf("binds /%s", e.Name)
		}
		if e.Name == "etc" {
			t.Error("binds the whole of /etc")
		}
	}
	if !seen["usr"] || !seen["etc/ld.so.cache"] {
		t.Errorf("missing what programs need: %v", root)
	}
	for _, secret := range []string{"etc/shadow", "etc/gshadow", "etc/ssh", "etc/machine-id", "etc/resolv.conf", "etc/hosts", "work", "srv", "opt", "var"} {
		if seen[secret] {
			t.Errorf("binds /%s", secret)
		}
	}
}
