package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// overlay is a machine's copy-on-write clone of a template root filesystem:
// writes land in the machine's upper folder, the template stays untouched.
type overlay struct {
	lower, upper, work string
	// merged is where the clone is mounted (set by the caller).
	merged string
}

func newOverlay(dir, template string) overlay {
	return overlay{lower: template, upper: filepath.Join(dir, "upper"), work: filepath.Join(dir, "work")}
}

// mount mounts the overlay (the helper must be root); writes land in upper.
func (o overlay) mount() error {
	if fi, err := os.Stat(o.lower); err != nil || !fi.IsDir() {
		return fmt.Errorf("template root filesystem %s is not a folder", o.lower)
	}
	for _, d := range []string{o.upper, o.work, o.merged} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", o.lower, o.upper, o.work)
	if err := unix.Mount("overlay", o.merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount the overlay clone of %s: %w", o.lower, err)
	}
	return nil
}
