package orchestrator

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Threat: the model names, as a subagent's input, a file the guest made a
// link to a host file, or a FIFO that would block the helper's read. Only
// regular files inside the shared folder are copied, and neither blocks.
func TestSubagentInputsAreRegularFilesOnly(t *testing.T) {
	shared, dst := t.TempDir(), t.TempDir()
	root, err := os.OpenRoot(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	os.WriteFile(filepath.Join(shared, "data.csv"), []byte("a,b\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(shared, "passwd"))
	if err := syscall.Mkfifo(filepath.Join(shared, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := copyRegular(root, "data.csv", filepath.Join(dst, "1")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "1")); string(b) != "a,b\n" {
		t.Fatalf("copied %q", b)
	}
	for _, name := range []string{"passwd", "pipe", "../../etc/passwd"} {
		done := make(chan error, 1)
		go func() { done <- copyRegular(root, name, filepath.Join(dst, filepath.Base(name))) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was copied", name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s blocked the copy", name)
		}
	}
}
