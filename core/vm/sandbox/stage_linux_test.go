package sandbox

import (
	"os"
	"testing"
)

// TestHostRoot: the host's root entries leave out what sandboxes get of
// their own (/dev, /proc, /run and the masked folders) and keep links as
// links.
func TestHostRoot(t *testing.T) {
	entries, err := hostRoot()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]RootEntry{}
	for _, e := range entries {
		names[e.Name] = e
	}
	for _, skip := range []string{"dev", "proc", "run", "tmp", "home", "root"} {
		if _, ok := names[skip]; ok {
			t.Errorf("/%s is bound", skip)
		}
	}
	if _, ok := names["usr"]; !ok || names["usr"].Link != "" {
		t.Errorf("/usr missing or a link: %+v", names["usr"])
	}
	if fi, err := os.Lstat("/bin"); err == nil && fi.Mode()&os.ModeSymlink != 0 && names["bin"].Link == "" {
		t.Errorf("/bin is a link on this host but not in the entries: %+v", names["bin"])
	}
}
